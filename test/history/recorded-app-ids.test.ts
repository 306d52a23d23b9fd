// The run each sandboxed driver started, as the service saw it (cluster/local/app-id-watch.ts),
// decides whose an event log is (cluster/history/run-claims.ts): a log claiming an id the service
// saw another application's driver start is refused even when it comes first, and the real run's
// log after it is taken. Applications with no id seen keep the first-come rule.
import { mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { EventLogIndex } from '../../cluster/history/event-log-index.js';
import { judgeLog, type RecordedRuns, type Refusal } from '../../cluster/history/run-claims.js';
import { AppIdWatches, chooseAppId, entryIds } from '../../cluster/local/app-id-watch.js';
import { LocalApps } from '../../cluster/local/local-apps.js';
import { RecordStore, type StoredApp } from '../../cluster/local/record-store.js';
import { collectEventLogs, workEventLogDir } from '../../cluster/local/sandbox-event-log.js';
import type { AdmissionRules } from '../../domain/index.js';
import type { AppRecord } from '../../cluster/cluster.js';
import { register } from '../../lib/metrics.js';
import { writeRollingLog, writeSingleLog } from '../helpers/event-logs.js';
import { sample } from '../helpers/metrics.js';
import { tempDir } from '../helpers/temp.js';

const REFUSED = 'submission_service_history_event_logs_refused_total';
const nothingHeld = { ownerOfRun: () => undefined, logOf: () => undefined };

/** The service saw alice-1's driver start local-100; nothing of bob-1's or carol-1's. */
const seen: RecordedRuns = {
  idsOf: (appName) => (appName === 'alice-1' ? ['local-100'] : []),
  ownerOf: (id) => (id === 'local-100' ? 'alice-1' : undefined),
};

t.test('the verdict: what the service saw decides, whichever log comes first', async (t) => {
  const forged = judgeLog('local-100', { sparkAppId: 'local-100', appName: 'bob-1', sparkAppName: 'x' }, nothingHeld, seen);
  t.match(forged, { verdict: 'refuse', reason: /run local-100 is the one the service saw application alice-1's driver start/, owner: 'alice-1' }, "B's claim on A's running id, first: refused, A named");
  t.same(judgeLog('eventlog_v2_local-100', { sparkAppId: 'local-100', appName: 'alice-1', sparkAppName: 'pi' }, nothingHeld, seen), { verdict: 'accept' }, "A's own log, after it: taken");
  t.match(judgeLog('local-150', { sparkAppId: 'local-150', appName: 'alice-1', sparkAppName: 'pi' }, nothingHeld, seen),
    { verdict: 'refuse', reason: /saw application alice-1's driver start run local-100, not local-150/, owner: 'alice-1' }, "a log of A's under another id than the one seen");
  t.match(judgeLog('local-100', { sparkAppId: 'local-100', appName: undefined, sparkAppName: 'x' }, nothingHeld, seen), { verdict: 'refuse', owner: 'alice-1' }, 'nor a run the service did not submit');
  // Nothing seen of carol-1: the first log to claim an id keeps it, as before.
  const carol = { sparkAppId: 'local-300', appName: 'carol-1', sparkAppName: 'c' };
  t.same(judgeLog('local-300', carol, nothingHeld, seen), { verdict: 'accept' }, 'an id nobody was seen to start: first come');
  const held = { ownerOfRun: (id: string) => (id === 'local-300' ? { appName: 'dave-1' } : undefined), logOf: () => undefined };
  t.match(judgeLog('local-300', carol, held, seen), { verdict: 'refuse', reason: /another log's already/, owner: 'dave-1' }, 'and an id held already stays held');
});

t.test('the directory index: the forged log first is refused and reported, the real one after it is indexed', async (t) => {
  const dir = tempDir(t);
  const refusals: Refusal[] = [];
  const index = new EventLogIndex(dir, { onRefused: (r) => refusals.push(r), recorded: seen });
  const before = sample(await register.metrics(), REFUSED, { store: 'local' });
  writeSingleLog(dir, 'local-100.inprogress', { sparkAppId: 'local-100', appName: 'bob-1' });
  await index.refresh();
  t.equal(index.lookup('bob-1'), undefined, "B's forged log holds nothing");
  t.same(refusals.map((r) => [r.entry, r.owner]), [['local-100.inprogress', 'alice-1']], 'reported, naming A');
  t.equal(sample(await register.metrics(), REFUSED, { store: 'local' }) - before, 1, 'and counted');
  writeRollingLog(dir, 'local-100', { sparkAppId: 'local-100', appName: 'alice-1' });
  await index.refresh();
  t.match(index.lookup('alice-1'), { sparkAppId: 'local-100', entry: 'eventlog_v2_local-100' }, "A's run is A's");
});

t.test("the sandbox's move: a log claiming a running run's id stays in the driver's work dir", async (t) => {
  const root = tempDir(t);
  const history = join(root, 'spark-events');
  const work = join(root, 'work', 'bob-1');
  mkdirSync(history, { recursive: true });
  const own = workEventLogDir(work);
  writeSingleLog(own, 'local-100', { sparkAppId: 'local-100', appName: 'bob-1' });
  writeRollingLog(own, 'local-200', { sparkAppId: 'local-200', appName: 'bob-1' });
  const warnings: string[] = [];
  const before = sample(await register.metrics(), REFUSED, { store: 'sandbox' });
  t.same(await collectEventLogs(work, history, 'bob-1', (entry, why) => warnings.push(`${entry}: ${why}`), seen), ['eventlog_v2_local-200'], "B's own run moves");
  t.same(readdirSync(history), ['eventlog_v2_local-200'], "nothing under A's id, though A's log is not in the history yet");
  t.match(warnings, [/^local-100: run local-100 is the one the service saw application alice-1's driver start/]);
  t.equal(sample(await register.metrics(), REFUSED, { store: 'sandbox' }) - before, 1);
});

t.test('which id is the run an attempt started: one Spark could have given it, no other application holds', async (t) => {
  const attempt = { appName: 'bob-1', startedMs: 1_000, nowMs: 5_000 };
  const none = () => undefined;
  t.equal(chooseAppId(['local-2000'], attempt, none), 'local-2000');
  t.equal(chooseAppId(['local-999'], attempt, none), undefined, 'older than the attempt: a run started before it');
  t.equal(chooseAppId(['local-5001'], attempt, none), undefined, 'a guess of a run to come');
  t.equal(chooseAppId(['nightly', 'local-0x10'], attempt, none), undefined, 'ids Spark did not date are not recorded');
  t.equal(chooseAppId(['local-3000', 'local-2000'], attempt, none), 'local-2000', 'the earliest when several');
  t.equal(chooseAppId(['local-2000', 'local-3000'], attempt, (id) => (id === 'local-2000' ? 'alice-1' : undefined)), 'local-3000', "another application's is passed over");
  t.equal(chooseAppId(['local-2000'], attempt, () => 'bob-1'), 'local-2000', 'its own already');
});

t.test("the names in a driver's folder: Spark's entries alone, nothing followed", async (t) => {
  const work = tempDir(t);
  const own = workEventLogDir(work);
  writeSingleLog(own, 'local-1.inprogress', { sparkAppId: 'local-1' });
  writeRollingLog(own, 'local-2', { sparkAppId: 'local-2' });
  mkdirSync(join(own, 'local-3'));
  symlinkSync('/etc/hostname', join(own, 'local-4'));
  writeFileSync(join(own, 'notes.txt'), '');
  t.same((await entryIds(work)).sort(), ['local-1', 'local-2']);
  t.same(await entryIds(join(work, 'gone')), [], 'no folder: no ids');
});

function runningApp(appName: string): StoredApp {
  const record = { appName, state: 'RUNNING', createdAt: new Date(0).toISOString(), startedAt: null, endedAt: null, attempt: 1, labels: {}, submittedBy: null } as unknown as AppRecord;
  return { record, pod: { metadata: { name: appName } } };
}

t.test('the watch records the first run a driver started, once, beside its record; another application cannot take it', async (t) => {
  const dataDir = tempDir(t);
  const log = { info: () => {}, warn: () => {}, error: () => {} } as never;
  const records = new RecordStore(join(dataDir, 'apps'), { log });
  const apps = new LocalApps(records, {} as AdmissionRules, log, dataDir, undefined);
  await records.create(runningApp('alice-1'));
  await records.create(runningApp('bob-1'));
  const watches = new AppIdWatches(apps, 3_600_000);
  t.teardown(() => watches.close());
  const startedMs = Date.now() - 1_000;
  const id = `local-${startedMs + 10}`;
  writeSingleLog(workEventLogDir(apps.workDir('alice-1')), `${id}.inprogress`, { sparkAppId: id, appName: 'alice-1' });
  const alice = { appName: 'alice-1', attempt: 1, workDir: apps.workDir('alice-1'), startedMs };
  watches.start(alice);
  await watches.finish(alice);
  t.same(apps.recordedRuns.idsOf('alice-1'), [id], "A's run is recorded");
  t.equal(apps.recordedRuns.ownerOf(id), 'alice-1');
  await records.flush();
  t.same((JSON.parse(readFileSync(join(dataDir, 'apps', 'alice-1.json'), 'utf8')) as StoredApp).appIds, [{ attempt: 1, sparkAppId: id }], 'in the record on disk');

  // B's driver names A's run in its own folder (it learnt A's id): not B's.
  writeSingleLog(workEventLogDir(apps.workDir('bob-1')), id, { sparkAppId: id, appName: 'bob-1' });
  // Not watched before (it ended while the service was down): the end's look alone.
  await watches.finish({ appName: 'bob-1', attempt: 1, workDir: apps.workDir('bob-1'), startedMs });
  t.same(apps.recordedRuns.idsOf('bob-1'), [], 'B has no run recorded: the first-come rule for its logs');
  t.equal(await apps.recordAppId('bob-1', 1, id), false, 'nor can it be recorded for B directly');
  t.equal(await apps.recordAppId('alice-1', 1, `local-${startedMs + 20}`), false, 'one id per attempt');
  t.same(new LocalApps(new RecordStore(join(dataDir, 'apps'), { log }), {} as AdmissionRules, log, dataDir, undefined).recordedRuns.ownerOf(id), 'alice-1', 'known again after a restart');

  // A deleted application's ids leave the index (LocalCluster.delete forgets them after the record).
  const stored = records.get('alice-1')!;
  await records.remove('alice-1');
  apps.forgetAppIds(stored);
  t.equal(apps.indexedAppIds, 0, 'the index holds no id of a deleted application');
  t.equal(apps.recordedRuns.ownerOf(id), undefined, 'and its id is free again');
});
