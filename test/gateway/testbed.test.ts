// On the Kubernetes test bed (`cluster up --nodes --run-pods`: a real apiserver, scheduler and
// webhook; the FakeKubelet TEST DOUBLE runs admitted driver pods as local processes), the
// standalone gateway submits a kernel through the API in Kubernetes mode, the admitted driver
// pod runs the launcher, a Spark cell answers, a killed driver is reported dead, delete ends it.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { binPath, http, realSpark, runCli, sparkEnv } from '../helpers/service.js';
import { exampleClusterFile } from '../helpers/api.js';
import { tempDir } from '../helpers/temp.js';
import { freePort, KernelClient } from './jupyter.js';

const testbed = sparkEnv().SUBMISSION_SERVICE_TESTBED;
const skip = !realSpark() ? 'needs the Spark virtualenv' : !testbed || !existsSync(testbed) ? 'needs SUBMISSION_SERVICE_TESTBED' : false;

t.test('a kernel through the real apiserver and webhook', { skip, timeout: 600_000 }, async (t) => {
  const root = tempDir(t);
  const clusterDir = join(root, 'cluster');
  const up = await runCli(['cluster', 'up', '--node-pools', exampleClusterFile, '--nodes', '--run-pods', '--dir', clusterDir], sparkEnv(), 180_000);
  t.teardown(() => runCli(['cluster', 'down', '--dir', clusterDir], sparkEnv()));
  const apiUrl = /BASE_URL=(\S+)/.exec(up.stdout)?.[1];
  t.ok(apiUrl, up.stdout + up.stderr);
  const port = await freePort();
  const gateway = spawn(process.execPath, [binPath, 'gateway', '--api-url', apiUrl!, '--port', String(port), '--host', '127.0.0.1', '--auth', 'off', '--data-dir', join(root, 'gateway')], {
    env: { ...sparkEnv(), LOG_LEVEL: 'warn' }, stdio: 'ignore',
  });
  const exited = new Promise((ok) => gateway.once('exit', ok));
  t.teardown(async () => { if (gateway.exitCode === null) { gateway.kill('SIGKILL'); await exited; } });
  const gw = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try { if ((await fetch(`${gw}/notebooks/api/kernels`)).ok) break; } catch { /* starting */ }
    if (i > 200) throw new Error('the gateway did not start');
    await new Promise((ok) => setTimeout(ok, 100));
  }

  const created = await http(gw, 'POST', '/notebooks/api/kernels', { name: 'default' });
  t.equal(created.status, 201, created.text);
  const id = created.json.id as string;
  const apps = await http(apiUrl!, 'GET', `/api/apps/?labelSelector=kernel.submission-service.io/id=${id}`);
  t.equal(apps.json.items.length, 1, 'an Application in the cluster');
  const client = await new KernelClient(`ws://127.0.0.1:${port}/notebooks/api/kernels/${id}/channels`).open(t);
  t.equal((await client.execute('sc.parallelize(range(100)).sum()', 240_000)).result, '4950');

  // A second kernel is killed from inside: its driver ends, the pod fails, the kernel is dead.
  const other = await http(gw, 'POST', '/notebooks/api/kernels', { name: 'default' });
  const victim = await new KernelClient(`ws://127.0.0.1:${port}/notebooks/api/kernels/${other.json.id}/channels`).open(t);
  t.equal((await victim.execute('1', 240_000)).result, '1');
  const from = victim.messages.length;
  const killed = Date.now();
  victim.send('shell', 'execute_request', { code: 'import os, signal; os.killpg(os.getpgid(0), signal.SIGKILL)', silent: false, store_history: false, user_expressions: {}, allow_stdin: false });
  await victim.waitFor((m) => m.header.msg_type === 'status' && m.content.execution_state === 'dead', 15_000, from);
  t.ok(true, `dead on iopub ${Date.now() - killed} ms after the driver was killed`);

  t.equal((await http(gw, 'DELETE', `/notebooks/api/kernels/${id}`)).status, 204);
  const after = await http(apiUrl!, 'GET', `/api/apps/?labelSelector=kernel.submission-service.io/id=${id}`);
  t.equal(after.json.items.length, 0, 'the Application is deleted');
});
