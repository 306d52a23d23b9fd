// A kernel whose driver is killed and retried as a new attempt (its template's restartPolicy
// OnFailure, issue 26), real parts only: `submission-service local --auth on`, a real `jupyter
// server` pointed at its /notebooks, a real ipykernel in the driver (no Spark: seconds). The
// notebook's websocket, through the Jupyter server, hears what jupyter_server says when its own
// restarter brings back a kernel that died: `restarting` on iopub, then the kernel answers again
// as attempt 2, a new process whose variables are gone. When the last attempt's driver dies too,
// the application ends FAILED and the notebook hears `dead`.
import { readdirSync, readFileSync } from 'node:fs';
import t from 'tap';
import { storedApps } from '../helpers/drivers.js';
import { http, realSpark, sparkEnv, startService } from '../helpers/service.js';
import { KernelClient, keyedDataDir, type Message, startJupyter, toolsEnv } from './jupyter.js';

const skip = !realSpark() || !toolsEnv() ? 'needs the Spark and tools virtualenvs' : false;
/**
 * The host pid of kernel `kernelId`'s driver process whose own pid is `inner`: local drivers run
 * in bwrap's PID namespace, where os.getpid() says another number than the host's.
 */
function driverPid(kernelId: string, inner: number): number {
  for (const name of readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
    try {
      if (!readFileSync(`/proc/${name}/environ`, 'utf8').split('\0').includes(`SUBMISSION_SERVICE_KERNEL_ID=${kernelId}`)) continue;
      const procStatus = readFileSync(`/proc/${name}/status`, 'utf8');
      const pids = /^NSpid:\s+(.+)$/m.exec(procStatus)?.[1].trim().split(/\s+/).map(Number) ?? [];
      if (!/^State:\s+Z/m.test(procStatus) && pids.at(-1) === inner) return Number(name);
    } catch { /* ended meanwhile, or not ours to read */ }
  }
  throw new Error(`no live driver process of kernel ${kernelId} with pid ${inner} in its namespace`);
}

const status = (state: string) => (m: Message) => m.channel === 'iopub' && m.header.msg_type === 'status' && m.content.execution_state === state;

t.test('a retried driver: the notebook is told the kernel restarted, then it answers as attempt 2; the last attempt dead', { skip, timeout: 900_000 }, async (t) => {
  const { root, dataDir, key, admin } = keyedDataDir(t, 'notebook');
  const service = await startService(t, { dataDir, env: sparkEnv(), args: ['--auth', 'on'] });
  const template = await http(service.url, 'POST', '/api/config-templates/', {
    name: 'retried',
    config: {
      pythonVersion: '3', driver: { env: { SUBMISSION_SERVICE_KERNEL_SPARK: 'off' } },
      restartPolicy: { type: 'OnFailure', retries: 1, retryIntervalSeconds: 0 },
    },
  }, { 'x-api-key': admin });
  t.equal(template.status, 201, template.text);
  const jupyter = await startJupyter(t, root, `${service.url}/notebooks`, key);
  const created = await http(jupyter.url, 'POST', `/api/kernels?token=${jupyter.token}`, { name: 'retried' });
  t.equal(created.status, 201, created.text);
  const id = created.json.id as string;
  const client = await new KernelClient(`${jupyter.url.replace('http', 'ws')}/api/kernels/${id}/channels?token=${jupyter.token}`).open(t);
  const first = await client.execute('import os\nx = 42\nos.getpid()', 300_000);
  t.equal(first.reply.content.status, 'ok', first.stderr);
  const firstPid = Number(first.result);
  const app = () => storedApps(dataDir).find((stored) => stored.record.labels?.['kernel.submission-service.io/id'] === id)!.record;
  t.equal(app().attempt ?? 1, 1, 'attempt 1 runs the kernel');

  // The kernel runs in the launcher's process, the driver's: killed from outside, it exits 137.
  const from = client.messages.length;
  const firstDriver = driverPid(id, firstPid);
  const killed = Date.now();
  process.kill(firstDriver, 'SIGKILL');
  const restarting = await client.waitFor(status('restarting'), 300_000, from);
  t.comment(`restarting on the notebook's socket ${Date.now() - killed} ms after the driver was killed`);
  const at = client.messages.indexOf(restarting);
  await client.waitFor(status('idle'), 300_000, at);
  t.pass("then idle: the kernel is back, as after jupyter_server's own auto-restart");
  t.equal(app().attempt, 2, "the application runs attempt 2 (restartPolicy)");

  const again = await client.execute('import os\nos.getpid()', 300_000);
  const secondDriver = driverPid(id, Number(again.result));
  t.not(secondDriver, firstDriver, 'another process answers');
  const lost = await client.execute('x');
  t.equal(lost.error?.ename, 'NameError', 'x is gone: the notebook was right to be told');
  const listed = (await http(service.url, 'GET', `/notebooks/api/kernels/${id}`, undefined, { authorization: `token ${key}` })).json;
  t.equal(listed.execution_state, 'idle', 'the same kernel id, idle');

  // The last attempt's driver dies too: no retry left, the application FAILED, the kernel dead.
  const last = client.messages.length;
  process.kill(secondDriver, 'SIGKILL');
  await client.waitFor(status('dead'), 300_000, last);
  t.notOk(client.messages.slice(last).some(status('restarting')), 'no restart announced for an attempt that will not come');
  t.equal(app().state, 'FAILED');
  t.equal((await http(service.url, 'GET', `/notebooks/api/kernels/${id}`, undefined, { authorization: `token ${key}` })).status, 404, 'and gone from the gateway');
});
