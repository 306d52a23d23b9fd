// `submission-service gateway --api-url URL`, the chart's notebook-service, as its own process
// beside `submission-service local --auth on` (the API): with its own key it accepts the
// notebook server's key, submits kernels through the API, and a Spark cell runs; its warm pool
// (--warm-pool) submits with its own key and hands the pooled kernel out.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import t from 'tap';
import { FileKeyStore } from '../../submit-api/auth/key-store.js';
import { binPath, http, realSpark, sparkEnv, startService } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';
import { freePort, KernelClient } from './jupyter.js';

const skip = !realSpark() ? 'needs the Spark virtualenv' : false;

t.test('the gateway alone, against the API over HTTP', { skip, timeout: 300_000 }, async (t) => {
  const root = tempDir(t);
  const dataDir = join(root, 'data');
  const ownKey = new FileKeyStore(dataDir).create('user', 'notebook-service').key;
  const admin = new FileKeyStore(dataDir).create('admin', 'templates').key;
  // Shared, as the chart shares gateway.secret: the API accepts kernel labels with the proof derived from it.
  const shared = { SUBMISSION_SERVICE_GATEWAY_SECRET: 'a-secret-the-api-and-the-gateway-share' };
  const api = await startService(t, { dataDir, env: { ...sparkEnv(), ...shared }, args: ['--auth', 'on'] });
  t.equal((await http(api.url, 'POST', '/api/config-templates/', { name: 'notebook', config: { pythonVersion: '3' } }, { 'x-api-key': admin })).status, 201);
  const port = await freePort();
  const child = spawn(process.execPath, [binPath, 'gateway', '--api-url', api.url, '--port', String(port), '--host', '127.0.0.1', '--data-dir', join(root, 'gateway'), '--warm-pool', 'notebook=1'], {
    env: { ...sparkEnv(), ...shared, SUBMISSION_SERVICE_API_KEY: ownKey, LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (c) => { output += c; });
  child.stderr.on('data', (c) => { output += c; });
  const exited = new Promise((ok) => child.once('exit', ok));
  t.teardown(async () => { if (child.exitCode === null) { child.kill('SIGKILL'); await exited; } });
  const deadline = Date.now() + 120_000; // a safety net: the line is printed once it listens
  while (!output.includes('Notebook gateway at')) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`the gateway did not start:\n${output}`);
    await new Promise((ok) => setTimeout(ok, 100));
  }
  const gw = `http://127.0.0.1:${port}`;
  t.equal((await http(gw, 'GET', '/notebooks/api/kernels', undefined, { authorization: 'token ssk_not-a-key' })).status, 401);
  const created = await http(gw, 'POST', '/notebooks/api/kernels', { name: 'default' }, { authorization: `token ${ownKey}` });
  t.equal(created.status, 201, created.text);
  const apps = await http(api.url, 'GET', `/api/apps/?labelSelector=kernel.submission-service.io/id=${created.json.id}`, undefined, { 'x-api-key': ownKey });
  t.equal(apps.json.items.length, 1, 'submitted through the API');
  const client = await new KernelClient(`ws://127.0.0.1:${port}/notebooks/api/kernels/${created.json.id}/channels?token=${ownKey}`).open(t);
  t.equal((await client.execute('sc.parallelize(range(100)).sum()', 180_000)).result, '4950');
  t.equal((await http(gw, 'DELETE', `/notebooks/api/kernels/${created.json.id}`, undefined, { authorization: `token ${ownKey}` })).status, 204);

  const auth = { authorization: `token ${ownKey}` };
  for (const until = Date.now() + 240_000; ;) {
    const pools = (await http(gw, 'GET', '/notebooks/api/warm-pool', undefined, auth)).json.pools as Array<{ template: string; ready: number }>;
    if (pools.find((p) => p.template === 'notebook')?.ready === 1) break;
    if (Date.now() > until) throw new Error(`the warm pool did not get ready:\n${output}`);
    await new Promise((ok) => setTimeout(ok, 250));
  }
  const pooled = await http(api.url, 'GET', '/api/apps/?labelSelector=kernel.submission-service.io/pool=notebook', undefined, { 'x-api-key': ownKey });
  t.equal(pooled.json.items.length, 1, 'the pool kernel is submitted through the API with the gateway\'s key');
  const claimed = await http(gw, 'POST', '/notebooks/api/kernels', { name: 'notebook' }, auth);
  t.equal(claimed.json.id, pooled.json.items[0].labels['kernel.submission-service.io/id'], 'and handed out on request');
  const poolClient = await new KernelClient(`ws://127.0.0.1:${port}/notebooks/api/kernels/${claimed.json.id}/channels?token=${ownKey}`).open(t);
  t.equal((await poolClient.execute('sc.parallelize(range(100)).sum()', 30_000)).result, '4950', 'with Spark up');
  t.equal((await http(gw, 'DELETE', `/notebooks/api/kernels/${claimed.json.id}`, undefined, auth)).status, 204);
});
