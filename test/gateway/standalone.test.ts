// `submission-service gateway --api-url URL`, the chart's notebook-service, as its own process
// beside `submission-service local --auth on` (the API): with its own key it accepts the
// notebook server's key, submits kernels through the API, and a Spark cell runs.
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
  const api = await startService(t, { dataDir, env: sparkEnv(), args: ['--auth', 'on'] });
  const port = await freePort();
  const child = spawn(process.execPath, [binPath, 'gateway', '--api-url', api.url, '--port', String(port), '--host', '127.0.0.1', '--data-dir', join(root, 'gateway')], {
    env: { ...sparkEnv(), SUBMISSION_SERVICE_API_KEY: ownKey, LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (c) => { output += c; });
  child.stderr.on('data', (c) => { output += c; });
  const exited = new Promise((ok) => child.once('exit', ok));
  t.teardown(async () => { if (child.exitCode === null) { child.kill('SIGKILL'); await exited; } });
  const deadline = Date.now() + 30_000;
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
});
