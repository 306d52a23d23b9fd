// The service dies (SIGKILL) with a Spark driver running and apps queued; started again on
// the same data dir it lists every accepted app, re-attaches to the driver that survived,
// and runs what was queued. Plus the same rules at LocalCluster level with crafted records.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { isTempFile } from '../../lib/atomic-file.js';
import { isAlive, processStartTicks, readExitCode } from '../../cluster/local/process-runner.js';
import { repoRoot, startTestApi } from '../helpers/api.js';
import { liveGroupMembers, storedApp, storedApps } from '../helpers/drivers.js';
import { fakeJob } from '../helpers/fake-spark-submit.js';
import { until, waitForState } from '../helpers/poll.js';
import { http, realSpark, startService } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';

const spark = realSpark();
const piJob = (partitions: number) => ({
  type: 'Python', mainApplicationFile: `local://${join(repoRoot, 'examples', 'pi.py')}`, arguments: [String(partitions)], executor: { cores: 2 },
});

t.test('SIGKILL of the real service mid-run: records survive, the driver is re-attached, the queue runs', { skip: spark ? false : 'no Spark virtualenv' }, async (t) => {
  const root = tempDir(t);
  const dataDir = join(root, 'data');
  // The queued app only needs to run at all: a Python file that does no Spark work is quick.
  const hello = join(root, 'hello.py');
  writeFileSync(hello, 'print("the queued app ran")\n');
  const first = await startService(t, { dataDir, args: ['--cores', '2'] });
  const submit = async (jobName: string, overrides: object) => {
    const res = await http(first.url, 'POST', '/api/apps/', { jobName, configOverrides: overrides });
    t.equal(res.status, 201, `${jobName} accepted`);
    return res.json.appName as string;
  };
  const running = await submit('long-pi', piJob(30)); // holds both cores for a while
  const queued = await submit('queued', { type: 'Python', mainApplicationFile: `local://${hello}`, executor: { cores: 2 } }); // waits PENDING
  const cancelled = await submit('cancelled', piJob(2)); // stopped while PENDING: KILLED
  t.equal((await http(first.url, 'POST', `/api/apps/${cancelled}/stop`)).json.state, 'KILLED');
  const accepted = [running, queued, cancelled];

  await until(async () => (await http(first.url, 'GET', `/api/apps/${running}`)).json.state === 'RUNNING', { timeoutMs: 60_000, what: 'RUNNING' });
  await until(() => storedApp(dataDir, running)?.record.state === 'RUNNING', { what: 'the RUNNING record on disk' });
  // Let the JVM get going, so the kill lands mid-run.
  const logFile = join(dataDir, 'logs', `${running}.log`);
  await until(() => existsSync(logFile) && /SparkContext|Running Spark version/.test(readFileSync(logFile, 'utf8')), { timeoutMs: 30_000, what: 'Spark to start' });
  t.equal((await http(first.url, 'GET', `/api/apps/${queued}`)).json.state, 'PENDING', 'the second app waits for cores');

  t.equal(await first.stop('SIGKILL'), 'SIGKILL', 'the service is killed');
  const run = storedApp(dataDir, running)!.run!;
  const survived = isAlive(run.pid, run.startTicks);
  t.ok(survived, 'the driver outlived the service (its own process group)');

  // A crash in the middle of a write leaves a temp file next to the records: never a record.
  const appsDir = join(dataDir, 'apps');
  const strayName = `ghost-20200101-000000-abcde.json.tmp-0123abcd`;
  writeFileSync(join(appsDir, strayName), '{"record": {"appName": "ghost-20200101-000000-abcde", "state": "RUNN');
  for (const name of readdirSync(appsDir)) {
    if (isTempFile(name)) continue;
    t.ok(name.endsWith('.json'), `${name} is a record file`);
    t.doesNotThrow(() => JSON.parse(readFileSync(join(appsDir, name), 'utf8')), `${name} parses`);
  }
  t.same(storedApps(dataDir).map((s) => s.record.appName).sort(), [...accepted].sort(), 'one record file per accepted app');

  const second = await startService(t, { dataDir, args: ['--cores', '2'] });
  const list = await http(second.url, 'GET', '/api/apps/');
  t.same(list.json.items.map((a: { appName: string }) => a.appName).sort(), [...accepted].sort(), 'every accepted app is listed, the stray temp file is not');
  t.equal((await http(second.url, 'GET', '/api/apps/ghost-20200101-000000-abcde')).status, 404);
  t.equal((await http(second.url, 'GET', `/api/apps/${cancelled}`)).json.state, 'KILLED', 'a finished app stays as it was');

  const get = (name: string) => async () => (await http(second.url, 'GET', `/api/apps/${name}`)).json;
  if (survived) {
    // Re-attached: RUNNING while its process lives. (On a loaded machine it may have ended
    // while the service was down; then its end is read from the exit code it left.)
    const [afterRestart, queuedAfter] = [await get(running)(), await get(queued)()];
    const stillAlive = isAlive(run.pid, run.startTicks);
    if (stillAlive) {
      t.equal(afterRestart.state, 'RUNNING', 'the surviving driver is re-attached: still RUNNING');
      t.equal(queuedAfter.state, 'PENDING', 'the queued app still waits: the re-attached driver holds the cores');
    } else {
      t.ok(['RUNNING', 'COMPLETED'].includes(afterRestart.state), `the driver ended around the restart: ${afterRestart.state}`);
    }
    const done = await waitForState(get(running), 'COMPLETED', { timeoutMs: 120_000, intervalMs: 500 });
    t.equal(done.stateDetail, 'exit code 0', 'its end is read from the exit code the driver left');
    t.same(liveGroupMembers(run.pid), [], 'its processes are gone');
  } else if (readExitCode(run.exitFile) === undefined) {
    t.equal((await get(running)()).state, 'UNKNOWN', 'a driver gone without an exit code is UNKNOWN');
  } else {
    t.equal((await waitForState(get(running), 'COMPLETED')).stateDetail, 'exit code 0', 'a driver that ended meanwhile: from its exit code');
  }
  const log = await http(second.url, 'GET', `/api/apps/${running}/log`);
  if (survived) t.match(log.text, /Pi is roughly 3\.\d+/, 'the log kept growing while the service was down');

  const next = await waitForState(get(queued), 'COMPLETED', { timeoutMs: 120_000, intervalMs: 500 });
  const prev = await get(running)();
  t.ok(next.startedAt >= prev.endedAt, 'the queued app started after the re-attached one ended');
  t.match((await http(second.url, 'GET', `/api/apps/${queued}/log`)).text, /the queued app ran/);
  t.equal(await second.stop('SIGTERM'), 0, 'SIGTERM ends the service cleanly');
});

t.test('LocalCluster recovery from crafted records: temp files, vanished drivers, exit codes, live drivers', async (t) => {
  // One app created normally gives a valid record to copy.
  const seed = await startTestApi(t);
  const { appName } = (await seed.call('POST', '/api/apps/', { jobName: 'seed', configOverrides: fakeJob() })).json;
  await waitForState(() => seed.getApp(appName), 'COMPLETED');
  await until(() => storedApp(seed.dataDir, appName)?.record.state === 'COMPLETED', { what: 'the record on disk' });
  const template = storedApp(seed.dataDir, appName)!;

  const api = await startTestApi(t, { cores: 2 });
  await api.app.close();
  await api.cluster.close();
  const dataDir = api.dataDir;
  const appsDir = join(dataDir, 'apps');
  const runDir = join(dataDir, 'run');
  const craft = (name: string, state: string, run?: object) => {
    const record = { ...template.record, appName: name, jobName: name.split('-')[0], state, createdAt: new Date().toISOString(), startedAt: state === 'PENDING' ? null : new Date().toISOString(), endedAt: null };
    writeFileSync(join(appsDir, `${name}.json`), JSON.stringify({ ...template, record, run }));
  };
  // A process that ended long ago: its pid, with a start time no live process has.
  const goneRun = (name: string) => ({ pid: 2 ** 22 - 3, startTicks: 1, cores: 1, logFile: join(dataDir, 'logs', `${name}.log`), exitFile: join(runDir, `${name}.exit`) });
  craft('vanished-20200101-000000-aaaaa', 'RUNNING', goneRun('vanished-20200101-000000-aaaaa'));
  craft('exited-20200101-000000-bbbbb', 'RUNNING', goneRun('exited-20200101-000000-bbbbb'));
  writeFileSync(join(runDir, 'exited-20200101-000000-bbbbb.exit'), '0');
  craft('crashed-20200101-000000-ccccc', 'RUNNING', goneRun('crashed-20200101-000000-ccccc'));
  writeFileSync(join(runDir, 'crashed-20200101-000000-ccccc.exit'), '7');
  // A live "driver" started before the restart: ends in ~1.5 s and leaves exit code 0.
  const liveExit = join(runDir, 'live-20200101-000000-ddddd.exit');
  const live = spawn('/bin/sh', ['-c', `sleep 1.5; printf 0 > "${liveExit}"`], { detached: true, stdio: 'ignore' });
  live.unref();
  t.teardown(() => { try { process.kill(-live.pid!, 'SIGKILL'); } catch { /* ended */ } });
  craft('live-20200101-000000-ddddd', 'RUNNING', { pid: live.pid, startTicks: processStartTicks(live.pid!), cores: 2, logFile: join(dataDir, 'logs', 'live.log'), exitFile: liveExit });
  craft('waiting-20200101-000000-eeeee', 'PENDING');
  // Half-written temp files of a crash: skipped, never parsed.
  writeFileSync(join(appsDir, 'torn-20200101-000000-fffff.json.tmp-89abcdef'), '{"record": {"appName": "torn');
  writeFileSync(join(appsDir, 'waiting-20200101-000000-eeeee.json.tmp-00ff00ff'), '{');
  // Exit-code temp files of wrappers killed before their rename: stale, unless a live driver may be writing one.
  writeFileSync(join(runDir, 'vanished-20200101-000000-aaaaa.exit.tmp'), '');
  writeFileSync(join(runDir, 'orphan-20200101-000000-ggggg.exit.tmp'), '1');
  writeFileSync(join(runDir, 'live-20200101-000000-ddddd.exit.tmp'), '');

  const { cluster } = await startTestApi(t, { cores: 2, dataDir });
  const state = async (name: string) => (await cluster.get(name))?.state;

  t.same((await cluster.list({ limit: 50 })).items.map((r) => r.appName).sort(), [
    'crashed-20200101-000000-ccccc', 'exited-20200101-000000-bbbbb', 'live-20200101-000000-ddddd', 'vanished-20200101-000000-aaaaa', 'waiting-20200101-000000-eeeee',
  ], 'every record, no temp file');
  t.same(readdirSync(runDir).filter((name) => name.endsWith('.exit.tmp')), ['live-20200101-000000-ddddd.exit.tmp'],
    'stale exit-code temp files removed at start; the live driver\'s kept');
  await until(async () => (await state('vanished-20200101-000000-aaaaa')) === 'UNKNOWN', { what: 'vanished -> UNKNOWN' });
  t.match((await cluster.get('vanished-20200101-000000-aaaaa'))!.stateDetail, /gone/, 'UNKNOWN says the process was gone');
  await until(async () => (await state('exited-20200101-000000-bbbbb')) === 'COMPLETED', { what: 'exit 0 -> COMPLETED' });
  await until(async () => (await state('crashed-20200101-000000-ccccc')) === 'FAILED', { what: 'exit 7 -> FAILED' });
  t.equal((await cluster.get('crashed-20200101-000000-ccccc'))!.stateDetail, 'exit code 7');
  t.equal(await state('live-20200101-000000-ddddd'), 'RUNNING', 'the live driver is re-attached');
  t.equal(await state('waiting-20200101-000000-eeeee'), 'PENDING', 'the pending app waits: the live driver holds both cores');
  await until(async () => (await state('live-20200101-000000-ddddd')) === 'COMPLETED', { timeoutMs: 60_000, what: 'live -> COMPLETED' });
  await until(async () => ['RUNNING', 'COMPLETED'].includes(String(await state('waiting-20200101-000000-eeeee'))), { timeoutMs: 60_000, what: 'the queue to move' });
  await until(async () => (await state('waiting-20200101-000000-eeeee')) === 'COMPLETED', { timeoutMs: 60_000, what: 'the pending app to run' });
  t.pass('the pending app ran once the cores were free');
});
