// History of sandboxed drivers (local mode, `--auth on`, bubblewrap): the shared event log
// directory lies in the data dir the sandbox hides, so each driver writes its event log into its
// own work dir and the service moves it into the history when the driver has ended. Real Spark,
// its History Server, two user keys: A's run opens from the history after its end; B's driver,
// running after A's ended, finds neither the shared directory nor A's log, and sees only its own.
import { execFileSync } from 'node:child_process';
import { accessSync, constants, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import t from 'tap';
import { FileKeyStore } from '../../submit-api/auth/key-store.js';
import { repoRoot } from '../helpers/api.js';
import { until, waitForState } from '../helpers/poll.js';
import { http, realSpark, sparkEnv, startService } from '../helpers/service.js';

const spark = realSpark();
const hasBwrap = (process.env.PATH ?? '').split(delimiter).some((dir) => {
  try { accessSync(join(dir, 'bwrap'), constants.X_OK); return true; } catch { return false; }
});
const skip = !spark ? 'needs the Spark virtualenv' : !hasBwrap ? 'needs bubblewrap (bwrap)' : false;

type Call = (method: string, path: string, body?: unknown) => Promise<{ status: number; json: any; text: string }>;
interface SparkUi { state: string; url: string | null }

t.test('a sandboxed run opens from the history after its end; another driver cannot read its event log', { skip, timeout: 420_000 }, async (t) => {
  // Outside /tmp (drivers get a /tmp of their own), so hiding the data dir is what is tested.
  const root = mkdtempSync('/var/tmp/subsvc-sandbox-history-');
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const dataDir = join(root, 'data');
  const store = new FileKeyStore(dataDir);
  const keys = { alice: store.create('user', 'alice').key, bob: store.create('user', 'bob').key, admin: store.create('admin', 'platform').key };
  const { url } = await startService(t, { dataDir, env: sparkEnv(), args: ['--auth', 'on', '--cores', '2'] });
  const as = (key: string): Call => (method, path, body) => http(url, method, path, body, { 'x-api-key': key });
  const [alice, bob, admin] = [as(keys.alice), as(keys.bob), as(keys.admin)];
  const ended = (name: string) => waitForState(async () => (await admin('GET', `/api/apps/${name}`)).json as { state: string }, ['COMPLETED', 'FAILED'], { timeoutMs: 240_000 });
  const historyOpens = async (call: Call, name: string) => {
    await until(async () => ((await call('GET', `/api/apps/${name}`)).json as { sparkUi: SparkUi }).sparkUi.state === 'history', { timeoutMs: 60_000, what: `the history of ${name}` });
    return call('GET', `/dashboard/apps/${name}/spark-ui/jobs/`);
  };

  const a = await alice('POST', '/api/apps/', { jobName: 'pi', configOverrides: { type: 'Python', mainApplicationFile: `local://${join(repoRoot, 'examples', 'pi.py')}`, arguments: ['2'] } });
  t.equal(a.status, 201, a.status === 201 ? 'A submits pi.py' : a.text);
  const aName = a.json.appName as string;
  t.equal(((await ended(aName)) as { state: string }).state, 'COMPLETED');
  const aLogs = readdirSync(join(dataDir, 'spark-events')).filter((e) => e.startsWith('eventlog_v2_'));
  t.equal(aLogs.length, 1, `the sandboxed run's event log is in the history's directory (${aLogs.join(', ')})`);
  const aPage = await historyOpens(alice, aName);
  t.equal(aPage.status, 200, 'its Spark UI link answers after the end');
  t.match(aPage.text, /Completed Jobs/, "from the history: the run's jobs page");
  t.equal((await bob('GET', `/dashboard/apps/${aName}/spark-ui/jobs/`)).status, 403, "B cannot open A's history through the link");

  // B's driver runs Spark (so it writes an event log of its own) and looks for A's.
  const aLog = join(dataDir, 'spark-events', aLogs[0]);
  const aFile = join(aLog, readdirSync(aLog).find((f) => f.startsWith('events_1_'))!);
  const peek = [
    'import os',
    // One write per line: the driver's stdout is unbuffered, so print() writes its pieces one by
    // one, and the JVM's stderr lines (the same log) once landed between them beside a loaded machine.
    'def say(*parts): os.write(1, (" ".join(map(str, parts)) + "\\n").encode())',
    'from pyspark.sql import SparkSession',
    'spark = SparkSession.builder.getOrCreate()',
    'spark.sparkContext.parallelize(range(4), 2).sum()',
    `for what, path in (('shared', ${JSON.stringify(join(dataDir, 'spark-events'))}), ('log', ${JSON.stringify(aLog)})):`,
    '    try: say("LISTED", what, os.listdir(path))',
    '    except Exception as e: say("DENIED list", what, type(e).__name__)',
    'try: say("READ", open(' + JSON.stringify(aFile) + ').read(200))',
    'except Exception as e: say("DENIED read", type(e).__name__)',
    'say("OWN", sorted(os.listdir("/tmp/app/spark-events")))',
    'spark.stop()',
  ].join('\n');
  const timeit = execFileSync(spark!.python!, ['-c', 'import timeit; print(timeit.__file__)'], { encoding: 'utf8' }).trim();
  const b = await bob('POST', '/api/apps/', { jobName: 'peek', configOverrides: { type: 'Python', mainApplicationFile: `local://${timeit}`, arguments: ['-n', '1', '-r', '1', '-s', peek, 'pass'] } });
  t.equal(b.status, 201, b.status === 201 ? 'B submits its peek' : b.text);
  const bName = b.json.appName as string;
  await ended(bName);
  const bLog = (await bob('GET', `/api/apps/${bName}/log`)).text;
  t.match(bLog, /DENIED list shared /, 'the shared event log directory is not visible to the driver');
  t.match(bLog, /DENIED list log /, "nor A's log folder");
  t.match(bLog, /DENIED read /, "nor A's event file");
  t.notMatch(bLog, /LISTED |READ /);
  t.notOk(bLog.includes(aName), "A's application name is nowhere in B's log");
  const own = /OWN \[(.*)\]/.exec(bLog)?.[1] ?? '';
  t.match(own, /^'eventlog_v2_[^']+'$/, `its own folder holds its own log only (${own})`);
  t.equal((await historyOpens(bob, bName)).status, 200, "B's run opens from the history too");
  t.equal(readdirSync(join(dataDir, 'spark-events')).filter((e) => e.startsWith('eventlog_v2_')).length, 2, 'both logs are in the history');
});
