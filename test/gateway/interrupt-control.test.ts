// An interrupt reaches a running cell after a control request said `idle` (a real kernel, no
// Spark: seconds). ipykernel handles control requests on a thread beside the shell and publishes
// busy/idle for them; the launcher took that idle for the end of the cell and skipped the SIGINT,
// so the cell ran on while the interrupt was answered 204.
import { join } from 'node:path';
import t from 'tap';
import { http, realSpark, sparkEnv, startService } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';
import { KernelClient } from './jupyter.js';

const skip = !realSpark() ? 'needs the Spark virtualenv' : false;

t.test('interrupt stops a cell that runs while a control request comes and goes', { skip, timeout: 300_000 }, async (t) => {
  const service = await startService(t, { dataDir: join(tempDir(t), 'data'), env: sparkEnv() });
  await http(service.url, 'POST', '/api/config-templates/', { name: 'plain', config: { pythonVersion: '3', driver: { env: { SUBMISSION_SERVICE_KERNEL_SPARK: 'off' } } } });
  const id = (await http(service.url, 'POST', '/notebooks/api/kernels', { name: 'plain' })).json.id as string;
  const client = await new KernelClient(`${service.url.replace('http', 'ws')}/notebooks/api/kernels/${id}/channels`).open(t);
  t.equal((await client.execute('1 + 1', 120_000)).result, '2', 'the kernel runs');
  const running = client.execute('import time\nwhile True: time.sleep(0.05)', 120_000);
  const cellId = () => client.messages.find((m) => m.header.msg_type === 'execute_input' && String(m.content.code).startsWith('import time'))?.parent_header.msg_id;
  await client.waitFor(() => cellId() !== undefined, 60_000);
  const info = client.send('control', 'kernel_info_request', {});
  await client.waitFor((m) => m.parent_header.msg_id === info && m.header.msg_type === 'status' && m.content.execution_state === 'idle', 60_000);
  const listed = (await http(service.url, 'GET', `/notebooks/api/kernels/${id}`)).json;
  t.equal(listed.execution_state, 'busy', "the control request's idle did not make the kernel idle");
  const interrupt = await http(service.url, 'POST', `/notebooks/api/kernels/${id}/interrupt`, undefined, { 'content-type': 'application/json' });
  t.equal(interrupt.status, 204, interrupt.text);
  const stopped = await running;
  t.equal(stopped.error?.ename, 'KeyboardInterrupt', 'the cell was interrupted');
  const restart = await http(service.url, 'POST', `/notebooks/api/kernels/${id}/restart`, undefined, { 'content-type': 'application/json' });
  t.equal(restart.status, 200, restart.text);
  t.equal(restart.json.execution_state, 'idle', "the kernel's state after the reset");
  t.equal((await http(service.url, 'DELETE', `/notebooks/api/kernels/${id}`, undefined, { 'content-type': 'application/json' })).status, 204);
});
