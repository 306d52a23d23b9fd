// Local mode's Spark per engineVersion (cluster/local/spark-envs.ts): the requirements file
// that pins a version, the venv path setup and the service agree on, one build at a time
// across processes (cluster/local/python-env.sh's lock), and an application whose version is not
// prepared yet saying so while it waits, then running that version's spark-submit.
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { requirementsFor, SparkEnvs, type SparkInstall, venvDir, venvName } from '../../cluster/local/spark-envs.js';
import { repoRoot, startTestApi } from '../helpers/api.js';
import { fakeJob, writeFakeSparkSubmit } from '../helpers/fake-spark-submit.js';
import { until, waitForState } from '../helpers/poll.js';
import { tempDir } from '../helpers/temp.js';

const files = [
  { name: 'requirements.txt', text: '# ours\npyspark==3.5.7\nnumpy>=2\n' },
  { name: 'requirements-spark-4.2.txt', text: 'pyspark==4.2.0  # Spark 4.2\npandas>=2.2,<3\n' },
];

t.test('the requirements file that pins the version, and the venv name setup gives it', async (t) => {
  t.equal(requirementsFor('3.5.7', files)?.name, 'requirements.txt');
  t.equal(requirementsFor('4.2.0', files)?.name, 'requirements-spark-4.2.txt', 'a pin with a comment after it');
  t.equal(requirementsFor('4.2.1', files), undefined, 'no file pins 4.2.1');
  t.equal(requirementsFor('3.5.70', files), undefined, 'a prefix is no pin');
  t.equal(venvName('requirements.txt', '3.5.7'), 'venv', "setup's own name for requirements.txt");
  t.equal(venvName('requirements-spark-4.2.txt', '4.2.0'), 'spark-4.2');
  const shipped = ['requirements.txt', 'requirements-spark-4.2.txt'].map((name) => ({ name, text: readFileSync(join(repoRoot, name), 'utf8') }));
  t.equal(requirementsFor('3.5.7', shipped)?.name, 'requirements.txt', 'the repository pins 3.5.7 in requirements.txt');
  t.equal(requirementsFor('4.2.0', shipped)?.name, 'requirements-spark-4.2.txt', 'and 4.2.0 in its own file');
});

/** Runs cluster/local/python-env.sh as setup does; resolves with its stdout and stderr. */
function pythonEnv(requirements: string, name: string, cache: string): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((done) => {
    const child = spawn('bash', [join(repoRoot, 'cluster', 'local', 'python-env.sh'), requirements, name], { env: { ...process.env, SUBMISSION_SERVICE_CACHE: cache } });
    let out = '';
    let err = '';
    child.stdout.on('data', (c) => { out += c; });
    child.stderr.on('data', (c) => { err += c; });
    // 'close', not 'exit': the process may exit before its output has been read.
    child.once('close', (code) => done({ code, out: out.trim(), err }));
  });
}

t.test('two processes asking for one venv at once: one builds, both get the path the service computes', { timeout: 300_000 }, async (t) => {
  const root = tempDir(t);
  const cache = join(root, 'cache');
  // A venv with nothing to install: the script's own work (venv, lock, marker), in seconds.
  const requirements = join(root, 'requirements-spark-9.9.txt');
  writeFileSync(requirements, '# pyspark==9.9.9 would go here\n');
  const [a, b] = await Promise.all([pythonEnv(requirements, 'spark-9.9', cache), pythonEnv(requirements, 'spark-9.9', cache)]);
  t.equal(a.code, 0, a.code === 0 ? 'the first exits 0' : a.err);
  t.equal(b.code, 0, b.code === 0 ? 'the second exits 0' : b.err);
  t.equal(a.out, b.out, 'the same venv for both');
  t.equal((a.err + b.err).match(/creating Python virtualenv/g)?.length, 1, 'made once: the second waited for the lock, then found it made');
  const python = await new Promise<string>((ok) => {
    const child = spawn('python3', ['--version']);
    let out = '';
    child.stdout.on('data', (c) => { out += c; });
    child.once('exit', () => ok(out));
  });
  t.equal(venvDir(cache, 'spark-9.9', readFileSync(requirements, 'utf8'), python), a.out, "the service's path is the script's");
  const again = await pythonEnv(requirements, 'spark-9.9', cache);
  t.notMatch(again.err, /creating/, 'a third run makes nothing');
});

t.test("SparkEnvs: a version ready in the cache at once; another's venv made by the script on first need", { timeout: 300_000 }, async (t) => {
  const root = tempDir(t);
  const cache = join(root, 'cache');
  mkdirSync(join(root, 'cluster', 'local'), { recursive: true });
  writeFileSync(join(root, 'cluster', 'local', 'python-env.sh'), readFileSync(join(repoRoot, 'cluster', 'local', 'python-env.sh')));
  writeFileSync(join(root, 'requirements.txt'), 'pyspark==3.5.7\n');
  // Nothing to install (a comment after the pin keeps pip from fetching pyspark): the pin is what names the version.
  writeFileSync(join(root, 'requirements-spark-9.9.txt'), '# pyspark==9.9.0\n');
  const envs = new SparkEnvs({ base: { sparkSubmit: '/base/bin/spark-submit', python: '/base/bin/python' }, root, cache });
  t.same(await envs.ready('3.5.7'), { version: '3.5.7', sparkSubmit: '/base/bin/spark-submit', python: '/base/bin/python', dir: '/base' }, "requirements.txt's version: setup's venv");
  t.equal(await envs.ready('9.9.0'), undefined, 'no file pins 9.9.0 (the comment is no pin): not ready');
  await t.rejects(envs.prepare('9.9.0'), /no requirements file pins pyspark==9\.9\.0/, 'and nothing to make it from');
  writeFileSync(join(root, 'requirements-spark-9.8.txt'), 'pyspark==9.8.0 ; python_version < "3"\n');
  const later = new SparkEnvs({ base: { sparkSubmit: 'spark-submit' }, root, cache });
  t.equal(await later.ready('9.8.0'), undefined, 'pinned but not made yet');
  const [first, second] = await Promise.all([later.prepare('9.8.0'), later.prepare('9.8.0')]);
  t.same(first, second, 'one build for two applications at once');
  t.match(first.dir, /\/spark-9\.8-[0-9a-f]{12}$/);
  t.same(await later.ready('9.8.0'), first, 'ready from the cache afterwards');
  t.same((await later.preparedNewestFirst(['3.5.7', '9.8.0'])).map((i) => i.version), ['9.8.0', '3.5.7'], 'newest first (for the History Server)');
});

t.test('the first application of an unprepared version says it is being prepared, then runs that version', async (t) => {
  const root = tempDir(t);
  // A stand-in for 4.2.0's spark-submit: says which it is, then acts as the fake.
  const fake = writeFakeSparkSubmit(root);
  const four = join(root, 'four', 'bin', 'spark-submit');
  mkdirSync(join(root, 'four', 'bin'), { recursive: true });
  writeFileSync(four, `#!/bin/sh\necho "stand-in for Spark 4.2.0"\nexec ${fake} "$@"\n`);
  chmodSync(four, 0o755);
  let release!: () => void;
  const made = new Promise<void>((ok) => { release = ok; });
  const prepared: string[] = [];
  const installOf = (version: string): SparkInstall => ({ version, sparkSubmit: four, dir: join(root, 'four') });
  const sparkEnvs = {
    ready: async (version: string): Promise<SparkInstall | undefined> =>
      (version === '3.5.7' ? { version, sparkSubmit: fake } : prepared.includes(version) ? installOf(version) : undefined),
    prepare: async (version: string): Promise<SparkInstall> => { await made; prepared.push(version); return installOf(version); },
  };
  const api = await startTestApi(t, { local: { sparkEnvs } });
  const submit = async (engineVersion: string) => {
    const res = await api.call('POST', '/api/apps/', { jobName: 'v', configOverrides: { ...fakeJob(), engineVersion } });
    t.equal(res.status, 201, res.status === 201 ? `submitted as ${engineVersion}` : res.body);
    return res.json.appName as string;
  };
  const first = await submit('4.2.0');
  await until(async () => /preparing Spark 4\.2\.0/.test((await api.getApp(first)).stateDetail ?? ''), { what: 'the preparing detail' });
  t.equal((await api.getApp(first)).state, 'PENDING', 'pending while its Spark is made');
  const old = await submit('3.5.7');
  t.equal((await waitForState(() => api.getApp(old), 'COMPLETED')).state, 'COMPLETED', 'a 3.5.7 application runs meanwhile');
  release();
  const done = await waitForState(() => api.getApp(first), 'COMPLETED');
  t.equal(done.stateDetail, 'exit code 0', 'the preparing detail is gone once it ran');
  t.match((await api.call('GET', `/api/apps/${first}/log`)).body, /stand-in for Spark 4\.2\.0/, "it ran 4.2.0's spark-submit");
  t.notMatch((await api.call('GET', `/api/apps/${old}/log`)).body, /stand-in/, "the 3.5.7 one ran the base's");
  const second = await submit('4.2.0');
  await waitForState(() => api.getApp(second), 'COMPLETED');
  t.notMatch(JSON.stringify((await api.getApp(second)).transitions ?? []), /preparing/, 'the next 4.2.0 application does not wait');
});
