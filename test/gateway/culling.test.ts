// Idle culling (off by default): with --cull-idle-seconds 3, a kernel with no connection and
// no activity is shut down and its application removed; a connected one is kept.
import { join } from 'node:path';
import t from 'tap';
import { http, realSpark, sparkEnv, startService } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';
import { KernelClient } from './jupyter.js';

const skip = !realSpark() ? 'needs the Spark virtualenv' : false;

t.test('idle kernels are culled when asked', { skip, timeout: 300_000 }, async (t) => {
  const service = await startService(t, { dataDir: join(tempDir(t), 'data'), env: sparkEnv(), args: ['--cull-idle-seconds', '3'] });
  await http(service.url, 'POST', '/api/config-templates/', { name: 'plain', config: { pythonVersion: '3', driver: { env: { SUBMISSION_SERVICE_KERNEL_SPARK: 'off' } } } });
  const ids = await Promise.all([0, 1].map(async () => (await http(service.url, 'POST', '/notebooks/api/kernels', { name: 'plain' })).json.id as string));
  const clients = await Promise.all(ids.map((id) => new KernelClient(`${service.url.replace('http', 'ws')}/notebooks/api/kernels/${id}/channels`).open(t)));
  await Promise.all(clients.map((c) => c.execute('1', 180_000)));
  clients[0].ws.close(); // the first kernel is left alone; the second keeps its connection
  const deadline = Date.now() + 60_000;
  let listed: string[] = ids;
  while (listed.includes(ids[0]) && Date.now() < deadline) {
    await new Promise((ok) => setTimeout(ok, 500));
    listed = ((await http(service.url, 'GET', '/notebooks/api/kernels')).json as Array<{ id: string }>).map((k) => k.id);
  }
  t.notOk(listed.includes(ids[0]), 'the idle kernel without connections was culled');
  t.ok(listed.includes(ids[1]), 'the connected one is kept');
  const apps = await http(service.url, 'GET', `/api/apps/?labelSelector=kernel.submission-service.io/id=${ids[0]}`);
  t.equal(apps.json.items.length, 0, 'its application is removed');
  t.equal((await http(service.url, 'DELETE', `/notebooks/api/kernels/${ids[1]}`)).status, 204);
});
