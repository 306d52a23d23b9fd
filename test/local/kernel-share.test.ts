// Kernels count toward their key's share of local mode's cores (issue 25), through the real
// service (`submission-service local --auth on --cores 4`: a key's share is 2 cores): key A's
// kernel holds its share while it lives, so A's next kernel is refused at once (429 with the
// reason, the Kernel Gateway answer a notebook shows) and A's batch application waits, while
// key B's starts. A's kernel ended, A's application starts and A may start a kernel again.
// The kernels' drivers are a stand-in python that stays up (no launcher, no JVM): what is tested
// is what a kernel holds, not what it runs. The pure decision: test/unit/core-scheduler.test.ts.
import { join } from 'node:path';
import t from 'tap';
import { FileKeyStore } from '../../submit-api/auth/key-store.js';
import { fakeJob, writeFakeKernelPython, writeFakeSparkEnv } from '../helpers/fake-spark-submit.js';
import { http, startService } from '../helpers/service.js';
import { until } from '../helpers/poll.js';
import { tempDir } from '../helpers/temp.js';

t.test('local mode: a key\'s kernels hold its share of the cores; its batch application waits, another key\'s starts', { timeout: 300_000 }, async (t) => {
  const root = tempDir(t);
  const dataDir = join(root, 'data');
  const store = new FileKeyStore(dataDir);
  const a = store.create('user', 'A').key;
  const b = store.create('user', 'B').key;
  const admin = store.create('admin', 'admin').key;
  const venv = writeFakeSparkEnv(root);
  writeFakeKernelPython(venv);
  const service = await startService(t, {
    dataDir, env: { ...process.env, SUBMISSION_SERVICE_PYTHON_ENV: venv }, args: ['--auth', 'on', '--cores', '4', '--key-core-share', '0.5'],
  });
  const api = (key: string, method: string, path: string, body?: unknown) => http(service.url, method, path, body, { 'x-api-key': key });
  const gateway = (key: string, method: string, path: string, body?: unknown) => http(service.url, method, `/notebooks${path}`, body, { authorization: `token ${key}` });
  for (const [name, cores] of [['two-cores', 2], ['one-core', 1]] as const) {
    const made = await api(admin, 'POST', '/api/config-templates/', { name, config: { pythonVersion: '3', executor: { cores, instances: 1 } } });
    t.equal(made.status, 201, `template ${name}`);
  }
  const kernelApp = async (key: string, kernelId: string) => {
    const { json } = await api(key, 'GET', '/api/apps/?labelSelector=kernel.submission-service.io/kernel%3Dtrue');
    return (json.items as Array<{ appName: string; state: string; labels: Record<string, string> }>).find((app) => app.labels['kernel.submission-service.io/id'] === kernelId);
  };
  const submit = async (key: string) => {
    const res = await api(key, 'POST', '/api/apps/', { jobName: 'share', configOverrides: { ...fakeJob({ sleep: 120 }), executor: { cores: 1, instances: 1 } } });
    t.equal(res.status, 201, res.status === 201 ? 'submitted' : res.text);
    return res.json.appName as string;
  };
  const state = async (key: string, appName: string) => (await api(key, 'GET', `/api/apps/${appName}`)).json.state as string;

  const first = await gateway(a, 'POST', '/api/kernels', { name: 'two-cores' });
  t.equal(first.status, 201, `A's first kernel starts: ${first.text}`);
  await until(async () => (await kernelApp(a, first.json.id as string))?.state === 'RUNNING', { what: 'A\'s kernel to run', timeoutMs: 60_000 });
  const held = (await kernelApp(a, first.json.id as string))!;
  const log = () => api(a, 'GET', `/api/apps/${held.appName}/log`).then((r) => r.text);
  await until(async () => /fake-python/.test(await log()), { what: 'the kernel driver\'s first line', timeoutMs: 60_000 });
  t.match(await log(), /--master 'local\[2\]'/, 'it runs local[2]: the two cores it holds while it lives');

  const refused = await gateway(a, 'POST', '/api/kernels', { name: 'one-core' });
  t.equal(refused.status, 429, 'A\'s next kernel is refused at once, not left starting');
  t.match(refused.json, { reason: 'Kernel not started', message: /holds 2 of the 2 cores its share of local mode allows/ }, `the answer says why: ${refused.text}`);
  t.equal((await gateway(a, 'GET', '/api/kernels')).json.length, 1, 'no kernel is left listed for the refused start');

  const waiting = await submit(a);
  t.equal(await state(a, waiting), 'PENDING', 'A\'s batch application waits although two cores are free: its kernel holds its share');
  const other = await submit(b);
  await until(async () => await state(b, other) === 'RUNNING', { what: 'B\'s application to start', timeoutMs: 60_000 });
  t.equal(await state(a, waiting), 'PENDING', 'B started, A still waits');

  t.equal((await gateway(a, 'DELETE', `/api/kernels/${first.json.id as string}`)).status, 204, 'A shuts its kernel down');
  await until(async () => await state(a, waiting) === 'RUNNING', { what: 'A\'s application to start once its kernel is gone', timeoutMs: 60_000 });
  const again = await gateway(a, 'POST', '/api/kernels', { name: 'one-core' });
  t.equal(again.status, 201, `within its share again (1 + 1 of 2), A starts a kernel: ${again.text}`);
  // Local drivers outlive the service by design (it adopts them at its next start): shut down here.
  t.equal((await gateway(a, 'DELETE', `/api/kernels/${again.json.id as string}`)).status, 204, 'A shuts that kernel down too');
});
