// A full disk, EMFILE, a corrupt file or a crash's temp file never ends the service: the
// request whose write failed is answered (507 / 500 with a message) and leaves nothing
// behind; background writes that fail are logged; starting sets bad files aside.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { writeFileAtomic, type WriteFileAtomic } from '../../lib/atomic-file.js';
import { LocalCluster } from '../../cluster/local/local-cluster.js';
import { buildRules } from '../../domain/index.js';
import { exampleCluster, startTestApi } from '../helpers/api.js';
import { fakeJob, writeFakeSparkSubmit } from '../helpers/fake-spark-submit.js';
import { until, waitForState } from '../helpers/poll.js';
import { tempDir } from '../helpers/temp.js';

interface Entry { level: string; obj: Record<string, unknown>; msg?: string }

/** Collects what local mode logs (a real pino logger's interface, kept in memory). */
function memoryLog() {
  const entries: Entry[] = [];
  const at = (level: string) => (obj: unknown, msg?: string) => { entries.push({ level, obj: (typeof obj === 'object' && obj) as Record<string, unknown>, msg }); };
  return { entries, log: { info: at('info'), warn: at('warn'), error: at('error') } as never };
}

/** Injected write failure: the error a real write gives on a full disk (or with no descriptors left). */
function failingDisk() {
  let failure: string | undefined;
  const writeFile: WriteFileAtomic = async (path, data, mode) => {
    if (failure) throw Object.assign(new Error(`${failure}: injected failure, write '${path}'`), { code: failure, syscall: 'write', path });
    return writeFileAtomic(path, data, mode);
  };
  return { writeFile, fail: (code: string | undefined) => { failure = code; } };
}

const recordFiles = (dataDir: string) => readdirSync(join(dataDir, 'apps'));

t.test('a full disk answers 507 to the submission, keeps nothing, and the service goes on', async (t) => {
  const disk = failingDisk();
  const { entries, log } = memoryLog();
  const api = await startTestApi(t, { writeFile: disk.writeFile, log, cores: 2 });
  disk.fail('ENOSPC');
  const refused = await api.call('POST', '/api/apps/', { jobName: 'full', configOverrides: fakeJob() });
  t.equal(refused.status, 507);
  t.match(refused.json, { statusCode: 507, message: /disk is full/ });
  t.same((await api.call('GET', '/api/apps/')).json.items, [], 'nothing half-visible');
  t.same(recordFiles(api.dataDir), [], 'no record and no temp file on disk');
  disk.fail('EDQUOT');
  t.equal((await api.call('POST', '/api/apps/', { jobName: 'quota', configOverrides: fakeJob() })).status, 507, 'a quota is a full disk too');

  disk.fail('EMFILE');
  const emfile = await api.call('POST', '/api/apps/', { jobName: 'emfile', configOverrides: fakeJob() });
  // Out of file descriptors is a passing overload (lib/process-guards.ts): 503 with Retry-After, nothing kept.
  t.equal(emfile.status, 503, 'out of file descriptors answers 503');
  t.ok(emfile.headers['retry-after'], 'with Retry-After');
  t.same(recordFiles(api.dataDir), [], 'and keeps nothing');

  disk.fail(undefined);
  const accepted = await api.call('POST', '/api/apps/', { jobName: 'fine', configOverrides: fakeJob({ sleep: 30 }) });
  t.equal(accepted.status, 201, 'the next submission is served once there is room');
  const running = await waitForState(() => api.getApp(accepted.json.appName), 'RUNNING');
  await until(() => JSON.parse(readFileSync(join(api.dataDir, 'apps', `${running.appName}.json`), 'utf8')).record.state === 'RUNNING');

  // A stop whose write fails is refused, and the app is as it was.
  disk.fail('ENOSPC');
  const stop = await api.call('POST', `/api/apps/${running.appName}/stop`);
  t.equal(stop.status, 507);
  disk.fail(undefined);
  t.equal((await api.getApp(running.appName)).state, 'RUNNING', 'still RUNNING after the refused stop');
  t.equal((await api.call('POST', `/api/apps/${running.appName}/stop`)).json.state, 'KILLED', 'a stop with room works');

  // A PENDING app whose stop cannot be written stays queued: it still runs later.
  const blocker = await api.call('POST', '/api/apps/', { jobName: 'blocker', configOverrides: { ...fakeJob({ sleep: 1 }), executor: { cores: 2 } } });
  const queued = await api.call('POST', '/api/apps/', { jobName: 'queued', configOverrides: { ...fakeJob(), executor: { cores: 2 } } });
  t.equal(queued.json.state, 'PENDING');
  disk.fail('ENOSPC');
  t.equal((await api.call('POST', `/api/apps/${queued.json.appName}/stop`)).status, 507);
  disk.fail(undefined);
  await waitForState(() => api.getApp(blocker.json.appName), 'COMPLETED');
  await waitForState(() => api.getApp(queued.json.appName), 'COMPLETED');

  // Background writes (a driver started, ended) that fail are logged, never crash the process.
  const quick = await api.call('POST', '/api/apps/', { jobName: 'background', configOverrides: { ...fakeJob({ sleep: 1 }), executor: { cores: 2 } } });
  disk.fail('ENOSPC');
  await until(() => entries.some((e) => e.level === 'error' && e.obj.appName === quick.json.appName), { what: 'a logged background failure', timeoutMs: 60_000 });
  const app = await waitForState(() => api.getApp(quick.json.appName), 'COMPLETED');
  t.equal(app.state, 'COMPLETED', 'memory stays true when the disk cannot follow');
  disk.fail(undefined);
});

t.test('a failed atomic write removes its temp file (real failure: rename onto a directory)', async (t) => {
  const dir = tempDir(t);
  mkdirSync(join(dir, 'target'));
  await t.rejects(writeFileAtomic(join(dir, 'target'), 'data'), { code: 'EISDIR' });
  t.same(readdirSync(dir), ['target'], 'no temp file left');
  await writeFileAtomic(join(dir, 'ok'), 'data');
  t.equal(statSync(join(dir, 'ok')).mode & 0o777, 0o600, 'created 0600');
});

t.test('a real full disk (small tmpfs): 507, no temp file, the service continues', async (t) => {
  const dir = tempDir(t);
  const mount = join(dir, 'disk');
  mkdirSync(mount);
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=256k', 'tmpfs', mount], { stdio: 'ignore' });
  } catch {
    t.comment('skipped: mounting a tmpfs was refused here (not root, or no CAP_SYS_ADMIN)');
    return;
  }
  t.teardown(() => { execFileSync('umount', ['-l', mount]); });
  const dataDir = join(mount, 'data');
  const api = await startTestApi(t, { dataDir, cores: 2 });
  // Fill what is left of the disk.
  const filler = join(mount, 'filler');
  try { writeFileSync(filler, Buffer.alloc(1024 * 1024)); } catch { /* ENOSPC: full, as wanted */ }
  const refused = await api.call('POST', '/api/apps/', { jobName: 'tmpfs', configOverrides: fakeJob() });
  t.equal(refused.status, 507, refused.body);
  t.same(recordFiles(dataDir), [], 'no record, no temp file');
  rmSync(filler);
  const accepted = await api.call('POST', '/api/apps/', { jobName: 'tmpfs', configOverrides: fakeJob() });
  t.equal(accepted.status, 201);
  await waitForState(() => api.getApp(accepted.json.appName), 'COMPLETED');
});

t.test('start with a truncated record, a corrupt template and stale temp files: set aside, named, started', async (t) => {
  const root = tempDir(t);
  const dataDir = join(root, 'data');
  // A good record first, from a real run.
  const first = await startTestApi(t, { dataDir, cores: 2 });
  const good = (await first.call('POST', '/api/apps/', { jobName: 'good', configOverrides: fakeJob() })).json.appName as string;
  await waitForState(() => first.getApp(good), 'COMPLETED');
  await first.cluster.close();
  const apps = join(dataDir, 'apps');
  const templates = join(dataDir, 'templates');
  const goodText = readFileSync(join(apps, `${good}.json`), 'utf8');
  writeFileSync(join(apps, 'bad-20260101-000000-aaaaa.json'), goodText.slice(0, goodText.length / 2));
  writeFileSync(join(apps, 'empty-20260101-000000-bbbbb.json'), '');
  mkdirSync(templates, { recursive: true });
  writeFileSync(join(templates, 'broken.json'), '{"name": "broken", "con');
  writeFileSync(join(apps, `${good}.json.tmp-0123abcd`), goodText.slice(0, 10));
  writeFileSync(join(templates, 'x.json.tmp-89abcdef'), '{');

  const { entries, log } = memoryLog();
  const cluster = new LocalCluster({
    dataDir, log, cores: 2, pollMs: 100, sparkSubmit: writeFakeSparkSubmit(root),
    rules: buildRules({ nodePools: exampleCluster().nodePools, namespace: 'local' }),
  });
  t.teardown(() => cluster.close());
  t.same((await cluster.list({ limit: 50 })).items.map((r) => r.appName), [good], 'the good record is served');
  t.same(await cluster.templates.list(), []);
  for (const file of [join(apps, 'bad-20260101-000000-aaaaa.json'), join(apps, 'empty-20260101-000000-bbbbb.json'), join(templates, 'broken.json')]) {
    t.ok(existsSync(`${file}.corrupt`) && !existsSync(file), `${file} set aside as .corrupt`);
    t.ok(entries.some((e) => e.level === 'error' && e.obj.file === file && e.msg?.includes(file)), `the log names ${file}`);
  }
  t.same(readdirSync(apps).filter((n) => n.includes('.tmp-')), [], 'stale temp records removed');
  t.same(readdirSync(templates).filter((n) => n.includes('.tmp-')), [], 'stale temp templates removed');
  t.ok(entries.some((e) => e.level === 'warn' && /temp files/.test(e.msg ?? '')), 'their removal is logged');
  t.equal(statSync(dataDir).mode & 0o777, 0o700, 'data dir 0700');
  t.equal(statSync(apps).mode & 0o777, 0o700, 'apps dir 0700');
  for (const file of [join(apps, `${good}.json`), join(dataDir, 'logs', `${good}.log`), join(dataDir, 'run', `${good}.exit`)]) {
    t.equal(statSync(file).mode & 0o777, 0o600, `${file} is 0600 (records hold env vars, logs may hold data)`);
  }
  for (const dir of ['logs', 'run', 'work', 'templates']) t.equal(statSync(join(dataDir, dir)).mode & 0o777, 0o700, `${dir}/ 0700`);
});
