// A hostile driver's event log against another user's run (local mode, `--auth on`, two user
// keys, bubblewrap, real Spark and its History Server). B's driver knows A's run id and leaves,
// where its event log goes, files named after A's run: one with B's own id inside, one claiming
// A's id. The service used to take the id from the file's name, so B's Spark UI link opened A's
// run (its environment, jobs, event log). Now B's link has no history, A's link shows A's run,
// and the service says why in a warning that names both applications.
// The second test makes B's claim while A still runs (so A's log is not in the history yet) and
// end first: the service saw A's driver start that run (cluster/local/app-id-watch.ts), so B's
// log is refused all the same, and A's own log is taken once A ends.
// Both tests run on one service (its start and its History Server's JVM are the costly part):
// their applications are told apart by name, and what the first reads of the history's
// directory is read before the second adds to it.
import { execFileSync } from 'node:child_process';
import { accessSync, constants, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import t, { type Test } from 'tap';
import { FileKeyStore } from '../../submit-api/auth/key-store.js';
import { APP_NAME_PROPERTY } from '../../domain/index.js';
import { repoRoot } from '../helpers/api.js';
import { until, waitForState } from '../helpers/poll.js';
import { http, realSpark, sparkEnv, startService } from '../helpers/service.js';

const spark = realSpark();
const hasBwrap = (process.env.PATH ?? '').split(delimiter).some((dir) => {
  try { accessSync(join(dir, 'bwrap'), constants.X_OK); return true; } catch { return false; }
});
const skip = !spark ? 'needs the Spark virtualenv' : !hasBwrap ? 'needs bubblewrap (bwrap)' : false;

/** B's driver: no event log of its own; two forged ones, each naming B's application (as the sandbox's move requires). */
function forger(victimId: string): string {
  return [
    'import json, os',
    'from pyspark.sql import SparkSession',
    "spark = SparkSession.builder.config('spark.eventLog.enabled', 'false').getOrCreate()",
    'sc = spark.sparkContext',
    `mark = sc.getConf().get(${JSON.stringify(APP_NAME_PROPERTY)})`,
    'def log(app_id):',
    "    env = {'Event': 'SparkListenerEnvironmentUpdate', 'Spark Properties': {" + JSON.stringify(APP_NAME_PROPERTY) + ": mark, 'spark.app.name': mark}}",
    "    start = {'Event': 'SparkListenerApplicationStart', 'App Name': mark, 'App ID': app_id, 'Timestamp': 1, 'User': 'b'}",
    // Compact, as Spark writes it (the History Server lists a log by lines of exactly that form).
    "    return '\\n'.join(json.dumps(e, separators=(',', ':')) for e in (env, start)) + '\\n'",
    "own = '/tmp/app/spark-events'",
    'os.makedirs(own, exist_ok=True)',
    `victim = ${JSON.stringify(victimId)}`,
    "open(os.path.join(own, victim + '.inprogress'), 'w').write(log(sc.applicationId))",
    'open(os.path.join(own, victim), \'w\').write(log(victim))',
    'print("FORGED", sorted(os.listdir(own)), flush=True)',
    'spark.stop()',
  ].join('\n');
}

/** A's driver: its run's id in its log, then it waits (bounded) for the test's word before it ends. */
const waiter = [
  'import os, time',
  'from pyspark.sql import SparkSession',
  'spark = SparkSession.builder.getOrCreate()',
  'print("APPID", spark.sparkContext.applicationId, flush=True)',
  'deadline = time.time() + 480',
  "while not os.path.exists('/tmp/app/release') and time.time() < deadline:",
  '    time.sleep(0.2)',
  'spark.range(10).count()',
  'spark.stop()',
].join('\n');

/** B's driver: its own run (event log and all), and beside it a log of B's under A's id, named after it. */
function claimer(victimId: string): string {
  return [
    'import json, os',
    'from pyspark.sql import SparkSession',
    'spark = SparkSession.builder.getOrCreate()',
    `mark = spark.sparkContext.getConf().get(${JSON.stringify(APP_NAME_PROPERTY)})`,
    "env = {'Event': 'SparkListenerEnvironmentUpdate', 'Spark Properties': {" + JSON.stringify(APP_NAME_PROPERTY) + ": mark, 'spark.app.name': mark}}",
    `start = {'Event': 'SparkListenerApplicationStart', 'App Name': mark, 'App ID': ${JSON.stringify(victimId)}, 'Timestamp': 1, 'User': 'b'}`,
    "text = '\\n'.join(json.dumps(e, separators=(',', ':')) for e in (env, start)) + '\\n'",
    `open(os.path.join('/tmp/app/spark-events', ${JSON.stringify(victimId)}), 'w').write(text)`,
    "print('CLAIMED', sorted(os.listdir('/tmp/app/spark-events')), flush=True)",
    'spark.range(10).count()',
    'spark.stop()',
  ].join('\n');
}

/** The real service with its data dir outside /tmp (drivers get a /tmp of their own), auth on, two user keys and an admin's. */
async function serviceWithTwoUsers(t: Test, prefix: string) {
  const root = mkdtempSync(join('/var/tmp', prefix));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const dataDir = join(root, 'data');
  const store = new FileKeyStore(dataDir);
  const keys = { alice: store.create('user', 'alice').key, bob: store.create('user', 'bob').key, admin: store.create('admin', 'platform').key };
  const service = await startService(t, { dataDir, env: sparkEnv(), args: ['--auth', 'on', '--cores', '2'] });
  const as = (key: string) => (method: string, path: string, body?: unknown) => http(service.url, method, path, body, { 'x-api-key': key });
  return { dataDir, service, alice: as(keys.alice), bob: as(keys.bob), admin: as(keys.admin) };
}

/** The file's one service, started by the first test that needs it and ended with the file. */
let shared: ReturnType<typeof serviceWithTwoUsers> | undefined;
const sharedService = () => (shared ??= serviceWithTwoUsers(t, 'subsvc-forged-log-'));

t.test("a driver's event log named after, or claiming, another user's run opens nothing of it", { skip, timeout: 600_000 }, async (t) => {
  const { dataDir, service, alice, bob, admin } = await sharedService();
  const ended = (name: string) => waitForState(async () => (await admin('GET', `/api/apps/${name}`)).json as { state: string }, ['COMPLETED', 'FAILED'], { timeoutMs: 240_000 });

  const a = await alice('POST', '/api/apps/', { jobName: 'pi', configOverrides: { type: 'Python', mainApplicationFile: `local://${join(repoRoot, 'examples', 'pi.py')}`, arguments: ['2'] } });
  t.equal(a.status, 201, a.status === 201 ? 'A submits pi.py' : a.text);
  const aName = a.json.appName as string;
  t.equal(((await ended(aName)) as { state: string }).state, 'COMPLETED');
  const aEntry = readdirSync(join(dataDir, 'spark-events')).find((e) => e.startsWith('eventlog_v2_'));
  const aId = aEntry!.slice('eventlog_v2_'.length);
  await until(async () => ((await alice('GET', `/api/apps/${aName}`)).json as { sparkUi: { state: string } }).sparkUi.state === 'history', { timeoutMs: 60_000, what: `the history of ${aName}` });

  const timeit = execFileSync(spark!.python!, ['-c', 'import timeit; print(timeit.__file__)'], { encoding: 'utf8' }).trim();
  const b = await bob('POST', '/api/apps/', { jobName: 'forge', configOverrides: { type: 'Python', mainApplicationFile: `local://${timeit}`, arguments: ['-n', '1', '-r', '1', '-s', forger(aId), 'pass'] } });
  t.equal(b.status, 201, b.status === 201 ? 'B submits its forger' : b.text);
  const bName = b.json.appName as string;
  t.equal(((await ended(bName)) as { state: string }).state, 'COMPLETED');
  t.match((await bob('GET', `/api/apps/${bName}/log`)).text, new RegExp(`FORGED \\['${aId}', '${aId}.inprogress'\\]`), "B's driver left both forged logs");

  const bLink = await bob('GET', `/dashboard/apps/${bName}/spark-ui/environment/`);
  t.equal(bLink.status, 404, "B's link opens no history");
  t.notOk(bLink.text.includes(aName), "nothing of A's run through B's link");
  const bApi = await bob('GET', `/dashboard/apps/${bName}/spark-ui/api/v1/applications/${aId}/environment`);
  t.notOk(bApi.status === 200 || bApi.text.includes(aName), "nor A's environment through B's link's API path");

  const aLink = await alice('GET', `/dashboard/apps/${aName}/spark-ui/environment/`);
  t.equal(aLink.status, 200, "A's link still opens A's run");
  t.ok(aLink.text.includes(aName), "A's environment, with A's application name");
  t.same(readdirSync(join(dataDir, 'spark-events')).sort(), [aEntry], "the history's directory holds A's log alone");
  const warnings = service.output().split('\n').filter((line) => line.includes('event log') && line.includes(bName));
  t.ok(warnings.some((line) => line.includes(`${aId}.inprogress`) && line.includes('is named after run')), 'the forgery under A\'s name is reported');
  t.ok(warnings.some((line) => line.includes(aName) && line.includes('has a log in the history already')), 'the claim on A\'s id is reported with both applications\' names');
});

t.test("a driver claiming a running run's id and ending first takes nothing of it", { skip, timeout: 600_000 }, async (t) => {
  const { dataDir, service, alice, bob, admin } = await sharedService();
  const state = async (name: string) => ((await admin('GET', `/api/apps/${name}`)).json as { state: string }).state;
  const ended = (name: string) => waitForState(async () => (await admin('GET', `/api/apps/${name}`)).json as { state: string }, ['COMPLETED', 'FAILED'], { timeoutMs: 300_000 });
  const timeit = execFileSync(spark!.python!, ['-c', 'import timeit; print(timeit.__file__)'], { encoding: 'utf8' }).trim();
  const submit = (as: typeof alice, jobName: string, code: string) => as('POST', '/api/apps/', { jobName, configOverrides: { type: 'Python', mainApplicationFile: `local://${timeit}`, arguments: ['-n', '1', '-r', '1', '-s', code, 'pass'] } });

  const a = await submit(alice, 'wait', waiter);
  t.equal(a.status, 201, a.status === 201 ? 'A submits a run that waits' : a.text);
  const aName = a.json.appName as string;
  let aId = '';
  await until(async () => { aId = /APPID (local-\d+)/.exec((await alice('GET', `/api/apps/${aName}/log`)).text)?.[1] ?? ''; return aId !== ''; }, { timeoutMs: 240_000, what: `${aName}'s Spark app id` });
  const recorded = () => (JSON.parse(readFileSync(join(dataDir, 'apps', `${aName}.json`), 'utf8')) as { appIds?: Array<{ sparkAppId: string }> }).appIds ?? [];
  await until(() => recorded().length > 0, { timeoutMs: 60_000, what: `the service to record ${aName}'s run` });
  t.same(recorded().map((seen) => seen.sparkAppId), [aId], "the service recorded A's run, the id A's Spark gave it");

  const b = await submit(bob, 'claim', claimer(aId));
  t.equal(b.status, 201, b.status === 201 ? 'B submits its claimer' : b.text);
  const bName = b.json.appName as string;
  t.equal(((await ended(bName)) as { state: string }).state, 'COMPLETED');
  t.match((await bob('GET', `/api/apps/${bName}/log`)).text, new RegExp(`CLAIMED \\[.*'${aId}'`), "B's driver left its claim on A's id");
  t.equal(await state(aName), 'RUNNING', 'B ended first: A still runs, its log not in the history yet');
  t.notOk(readdirSync(join(dataDir, 'spark-events')).some((entry) => entry.includes(aId)), "nothing under A's id in the history");
  await until(async () => ((await bob('GET', `/api/apps/${bName}`)).json as { sparkUi: { state: string } }).sparkUi.state === 'history', { timeoutMs: 60_000, what: `the history of ${bName}` });
  const bLink = await bob('GET', `/dashboard/apps/${bName}/spark-ui/environment/`);
  t.equal(bLink.status, 200, "B's link opens B's own run");
  t.ok(bLink.text.includes(bName) && !bLink.text.includes(aName), "B's run, nothing of A's");
  const bApi = await bob('GET', `/dashboard/apps/${bName}/spark-ui/api/v1/applications/${aId}/environment`);
  t.notOk(bApi.status === 200 || bApi.text.includes(aName), "nor A's run through B's link's API path");

  // A's word to end: a file in its work dir (its /tmp/app).
  writeFileSync(join(dataDir, 'work', aName, 'release'), '');
  t.equal(((await ended(aName)) as { state: string }).state, 'COMPLETED');
  await until(async () => ((await alice('GET', `/api/apps/${aName}`)).json as { sparkUi: { state: string } }).sparkUi.state === 'history', { timeoutMs: 60_000, what: `the history of ${aName}` });
  const aLink = await alice('GET', `/dashboard/apps/${aName}/spark-ui/environment/`);
  t.equal(aLink.status, 200, "A's link opens A's run");
  t.ok(aLink.text.includes(aName) && !aLink.text.includes(bName), "A's environment, with A's application name");
  t.ok(readdirSync(join(dataDir, 'spark-events')).includes(`eventlog_v2_${aId}`), "A's own log is in the history");
  const warnings = service.output().split('\n').filter((line) => line.includes('event log') && line.includes(bName));
  t.ok(warnings.some((line) => line.includes(aId) && line.includes(`saw application ${aName}'s driver start`)), "B's claim is reported, naming A");
});
