// What the service takes from an ended sandboxed driver's event log folder (its own work dir,
// written by code the service does not trust): Spark's log of that application, moved whole;
// not a link to another run's log, not a log that names another application, not over an entry
// that exists. And the driver's command line: the service's event log directory becomes its own.
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { collectEventLogs, SANDBOX_EVENT_LOG_DIR, sandboxedConf, workEventLogDir } from '../../cluster/local/sandbox-event-log.js';
import type { DriverSandbox } from '../../cluster/local/sandbox.js';
import { APP_NAME_PROPERTY } from '../../domain/index.js';
import { writeSingleLog } from '../helpers/event-logs.js';
import { tempDir } from '../helpers/temp.js';

/** The head of a real rolling event log: the environment (with the run's mark), then the start. */
function writeRollingLog(dir: string, sparkAppId: string, appName: string): string {
  const folder = join(dir, `eventlog_v2_${sparkAppId}`);
  mkdirSync(folder, { recursive: true });
  const lines = [
    { Event: 'SparkListenerLogStart', 'Spark Version': '3.5.7' },
    { Event: 'SparkListenerEnvironmentUpdate', 'Spark Properties': { [APP_NAME_PROPERTY]: appName } },
    { Event: 'SparkListenerApplicationStart', 'App Name': 'pi', 'App ID': sparkAppId },
  ];
  writeFileSync(join(folder, `events_1_${sparkAppId}`), `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);
  writeFileSync(join(folder, `appstatus_${sparkAppId}`), '');
  return folder;
}

function setup(t: Parameters<typeof tempDir>[0]) {
  const root = tempDir(t);
  const history = join(root, 'spark-events');
  const work = join(root, 'work', 'pi-1');
  mkdirSync(history, { recursive: true });
  mkdirSync(workEventLogDir(work), { recursive: true });
  const warnings: string[] = [];
  const collect = () => collectEventLogs(work, history, 'pi-1', (entry, why) => warnings.push(`${entry}: ${why}`));
  return { history, work, own: workEventLogDir(work), warnings, collect };
}

t.test("the application's own log moves whole into the history", async (t) => {
  const { history, own, warnings, collect } = setup(t);
  writeRollingLog(own, 'local-1', 'pi-1');
  t.same(await collect(), ['eventlog_v2_local-1']);
  t.same(readdirSync(join(history, 'eventlog_v2_local-1')).sort(), ['appstatus_local-1', 'events_1_local-1']);
  t.same(readdirSync(own), [], 'nothing left behind');
  t.same(warnings, []);
  t.same(await collect(), [], 'twice is harmless');
});

t.test('a log naming another application stays where the driver left it', async (t) => {
  const { history, own, warnings, collect } = setup(t);
  writeRollingLog(own, 'local-2', 'victim-1');
  t.same(await collect(), []);
  t.same(readdirSync(history), []);
  t.match(warnings, [/eventlog_v2_local-2: its head names application victim-1/]);
});

t.test('links to other files are not followed into the history', async (t) => {
  const { history, own, warnings, collect } = setup(t);
  const secret = join(history, '..', 'keys.json');
  writeFileSync(secret, '{"keys":[]}');
  const folder = writeRollingLog(own, 'local-3', 'pi-1');
  symlinkSync(secret, join(folder, 'events_2_local-3'));
  symlinkSync(secret, join(own, 'local-4'));
  t.same(await collect(), []);
  t.same(readdirSync(history), []);
  t.match(warnings.sort(), [/eventlog_v2_local-3: events_2_local-3 is not a plain file/, /local-4: not a plain file/]);
});

t.test("an entry of another run's name is not replaced; other names are not taken", async (t) => {
  const { history, own, warnings, collect } = setup(t);
  const theirs = writeRollingLog(history, 'local-5', 'other-1');
  const before = readFileSync(join(theirs, 'events_1_local-5'), 'utf8');
  writeRollingLog(own, 'local-5', 'pi-1');
  mkdirSync(join(own, 'notes'));
  t.same(await collect(), []);
  t.equal(readFileSync(join(theirs, 'events_1_local-5'), 'utf8'), before, "the other run's log is untouched");
  t.match(warnings.sort(), [/eventlog_v2_local-5: run local-5 has a log in the history already \(eventlog_v2_local-5, application other-1's\)/, /notes: a folder that is not a rolling event log/]);
  t.ok(existsSync(join(own, 'eventlog_v2_local-5')), 'left in the work dir (deleted with the application)');
});

t.test("a log named after another run, or claiming another run's id, stays where the driver left it", async (t) => {
  const { history, own, warnings, collect } = setup(t);
  writeRollingLog(history, 'local-6', 'other-1');
  // Its own run (local-8) under another run's name; and another run's id inside, under a name of its own kind.
  writeSingleLog(own, 'local-6.inprogress', { sparkAppId: 'local-8', appName: 'pi-1' });
  writeSingleLog(own, 'local-6', { sparkAppId: 'local-6', appName: 'pi-1' });
  writeRollingLog(own, 'local-7', 'pi-1');
  t.same(await collect(), ['eventlog_v2_local-7'], 'its own log, named after its own run, moves');
  t.same(readdirSync(history).sort(), ['eventlog_v2_local-6', 'eventlog_v2_local-7']);
  t.match(warnings.sort(), [/^local-6.inprogress: it is named after run local-6 but says it is run local-8/, /^local-6: run local-6 has a log in the history already \(eventlog_v2_local-6, application other-1's\)/]);
});

t.test("the driver's command line: the service's directory becomes the driver's own", async (t) => {
  const sandbox: DriverSandbox = { bwrap: '/usr/bin/bwrap', hidden: [], readable: [], dataDir: '/data', eventLogDir: '/data/spark-events' };
  const own = `spark.eventLog.dir=file://${SANDBOX_EVENT_LOG_DIR}`;
  t.equal(sandboxedConf('spark.eventLog.dir=file:///data/spark-events', sandbox), own);
  t.equal(sandboxedConf('spark.eventLog.dir=file:/data/spark-events/', sandbox), own);
  t.equal(sandboxedConf('spark.eventLog.dir=/data/spark-events', sandbox), own);
  t.equal(sandboxedConf('spark.eventLog.dir=s3a://bucket/events', sandbox), 'spark.eventLog.dir=s3a://bucket/events', "a submission's own directory stays");
  t.equal(sandboxedConf('spark.app.name=x', sandbox), 'spark.app.name=x');
  t.equal(sandboxedConf('spark.eventLog.dir=file:///data/spark-events', { ...sandbox, eventLogDir: undefined }), 'spark.eventLog.dir=file:///data/spark-events', 'no history: as written');
});
