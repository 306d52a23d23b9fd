// Event logs known by what they say (cluster/history/run-claims.ts, event-log-head.ts): the
// History Server serves a run by the `App ID` inside its log, so the service indexes each log by
// that id and its appName mark, never by the file's name. A driver's log named after another
// run, or claiming another run's id or another application, is refused (not indexed, so no
// link serves it) and reported; the run that held the id keeps it. Heads are read to a byte cap.
import { Readable } from 'node:stream';
import t from 'tap';
import { identityFromHead } from '../../cluster/history/event-log-head.js';
import { EventLogIndex } from '../../cluster/history/event-log-index.js';
import { describeRefusal, judgeLog, type Refusal } from '../../cluster/history/run-claims.js';
import { register } from '../../lib/metrics.js';
import { logText, writeRollingLog, writeSingleLog } from '../helpers/event-logs.js';
import { sample } from '../helpers/metrics.js';
import { tempDir } from '../helpers/temp.js';

const REFUSED = 'submission_service_history_event_logs_refused_total';
const nothingHeld = { ownerOfRun: () => undefined, logOf: () => undefined };

t.test('the verdict on a log: its name and its content agree, and nothing it claims is held by another', async (t) => {
  const alice = { sparkAppId: 'local-1', appName: 'pi-a', sparkAppName: 'pi' };
  t.same(judgeLog('eventlog_v2_local-1', alice, nothingHeld), { verdict: 'accept' });
  t.same(judgeLog('local-1.inprogress', alice, nothingHeld), { verdict: 'accept' });
  const misnamed = judgeLog('eventlog_v2_local-1', { ...alice, sparkAppId: 'local-2', appName: 'pi-b' }, {
    ownerOfRun: (id) => (id === 'local-1' ? { appName: 'pi-a' } : undefined), logOf: () => undefined,
  });
  t.match(misnamed, { verdict: 'refuse', reason: /named after run local-1 but says it is run local-2/, owner: 'pi-a' }, "named after A's run: refused, A named");
  const held = { ownerOfRun: (id: string) => (id === 'local-1' ? { appName: 'pi-a' } : undefined), logOf: (name: string) => (name === 'pi-a' ? { entry: 'eventlog_v2_local-1', sparkAppId: 'local-1' } : undefined) };
  t.match(judgeLog('local-1', { ...alice, appName: 'pi-b' }, held), { verdict: 'refuse', reason: /run local-1 is another log's already/, owner: 'pi-a' }, "claiming A's id");
  t.match(judgeLog('local-9', { ...alice, sparkAppId: 'local-9' }, held), { verdict: 'refuse', reason: /application pi-a has a log already/ }, "claiming A's name for another run");
  t.same(judgeLog('local-1', alice, { ...held, ownerOfRun: () => ({ appName: 'pi-a' }) }), { verdict: 'wait' }, 'the same run under a second name (Spark renaming its log): read later');
  t.match(judgeLog('local-1', { ...alice, appName: undefined }, held), { verdict: 'refuse' }, 'a run the service did not submit may not take an id either');
  const report = describeRefusal({ entry: 'local-1', reason: 'r', identity: { ...alice, appName: 'pi-b', sparkAppName: 'x' }, owner: 'pi-a' });
  t.match(report, /local-1 refused.*names application pi-b.*application pi-a's/, 'the report names both applications');
});

t.test("the directory index: a driver's log named after, or claiming, another run is refused and reported", async (t) => {
  const dir = tempDir(t);
  const refusals: Refusal[] = [];
  const index = new EventLogIndex(dir, { onRefused: (r) => refusals.push(r) });
  const before = sample(await register.metrics(), REFUSED, { store: 'local' });
  writeRollingLog(dir, 'local-100', { sparkAppId: 'local-100', appName: 'alice-1' });
  await index.refresh();
  t.match(index.lookup('alice-1'), { sparkAppId: 'local-100', entry: 'eventlog_v2_local-100', completed: true });

  // B's own run (local-200), in a file named after A's: the index used to take A's id from the name.
  writeSingleLog(dir, 'local-100.inprogress', { sparkAppId: 'local-200', appName: 'bob-1' });
  // B's log claiming A's id inside, and B's log claiming A's application for a run of its own.
  writeSingleLog(dir, 'local-100', { sparkAppId: 'local-100', appName: 'bob-2' });
  writeRollingLog(dir, 'local-300', { sparkAppId: 'local-300', appName: 'alice-1' });
  await index.refresh();
  t.equal(index.lookup('bob-1'), undefined, "the log named after A's run is not B's link to it");
  t.equal(index.lookup('bob-2'), undefined, "the log claiming A's id is not indexed");
  t.match(index.lookup('alice-1'), { sparkAppId: 'local-100', entry: 'eventlog_v2_local-100' }, "A's run is still A's");
  t.same(refusals.map((r) => [r.entry, r.owner]).sort(), [['eventlog_v2_local-300', 'alice-1'], ['local-100', 'alice-1'], ['local-100.inprogress', 'alice-1']]);
  t.equal(sample(await register.metrics(), REFUSED, { store: 'local' }) - before, 3, 'each refusal counted');
  await index.refresh();
  t.equal(refusals.length, 3, 'a refused log is reported once');

  // A's log gone (retention): its id and name are free again, for a log read anew.
  await index.remove('alice-1');
  t.equal(index.lookup('alice-1'), undefined);
  writeRollingLog(dir, 'local-400', { sparkAppId: 'local-400', appName: 'carol-1' });
  await index.refresh();
  t.match(index.lookup('carol-1'), { sparkAppId: 'local-400' });
});

t.test('a rolling log is read from its own first file only, and a single file under a compressed name not at all', async (t) => {
  const dir = tempDir(t);
  const index = new EventLogIndex(dir);
  const folder = writeRollingLog(dir, 'local-5', { sparkAppId: 'local-5', appName: 'pi-5' });
  writeSingleLog(folder, 'events_1_local-6', { sparkAppId: 'local-6', appName: 'pi-6' });
  writeSingleLog(dir, 'local-7.zstd', { sparkAppId: 'local-7', appName: 'pi-7' });
  await index.refresh();
  t.match(index.lookup('pi-5'), { sparkAppId: 'local-5' });
  t.equal(index.lookup('pi-6'), undefined, "another run's file inside a folder is not its head");
  t.equal(index.lookup('pi-7'), undefined);
});

t.test("a log's head is read to a byte cap, however long its lines", async (t) => {
  let pulled = 0;
  const chunk = Buffer.alloc(64 * 1024, 'x');
  // An endless first line: the reading stops at the cap, it does not hold the line whole.
  const endless = new Readable({ read() { pulled += chunk.length; this.push(chunk); } });
  const reading = await identityFromHead(endless, 1024 * 1024);
  t.same(reading, { identity: undefined, pastCap: true });
  t.ok(pulled <= 1024 * 1024 + 2 * chunk.length, `read ${pulled} bytes for a 1 MiB cap`);
  t.ok(endless.destroyed, 'the stream is closed');
  const text = logText({ sparkAppId: 'local-8', appName: 'pi-8', sparkAppName: 'π' });
  const split = Buffer.from(text);
  const cut = split.indexOf(Buffer.from('π')) + 1; // inside the two-byte character
  const found = await identityFromHead(Readable.from([split.subarray(0, cut), split.subarray(cut)]));
  t.same(found, { identity: { sparkAppId: 'local-8', appName: 'pi-8', sparkAppName: 'π' } }, 'a character split between chunks');
  t.same(await identityFromHead(Readable.from([text.slice(0, text.lastIndexOf('{"Event":"SparkListenerApplicationStart"'))])), { identity: undefined, pastCap: false }, 'not started yet: read again later');
});
