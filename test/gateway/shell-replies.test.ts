// Every shell request gets its reply, however requests and replies interleave. The kernel's
// launcher once read its ZMQ sockets through zmq.asyncio while jupyter_client sent on them behind
// the wrapper's back; a reply that arrived during a send never woke the reader, and that kernel's
// shell replies stopped for good (Notebook 7's cell then stayed `[*]`). Requests pipelined at
// connect, as Notebook sends them, into kernels still starting, made it happen in most runs.
import { readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { http, realSpark, sparkEnv, startService } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';
import { KernelClient } from './jupyter.js';

const skip = !realSpark() ? 'needs the Spark virtualenv' : false;
const KERNELS = 6;
const CELLS = 100;

t.test('shell replies keep coming: pipelined requests at connect, then cells one after another', { skip, timeout: 300_000 }, async (t) => {
  const service = await startService(t, { dataDir: join(tempDir(t), 'data'), env: sparkEnv() });
  await http(service.url, 'POST', '/api/config-templates/', { name: 'plain', config: { pythonVersion: '3', driver: { env: { SUBMISSION_SERVICE_KERNEL_SPARK: 'off' } } } });
  const ids = await Promise.all(Array.from({ length: KERNELS }, async () => (await http(service.url, 'POST', '/notebooks/api/kernels', { name: 'plain' })).json.id as string));
  const replies = await Promise.all(ids.map(async (id) => {
    // Opened at once: the gateway holds these until the launcher dials in, then they arrive together.
    const client = await new KernelClient(`${service.url.replace('http', 'ws')}/notebooks/api/kernels/${id}/channels`).open(t);
    const asked = [client.send('shell', 'kernel_info_request', {}), client.send('shell', 'kernel_info_request', {}), client.send('shell', 'comm_info_request', {})];
    const answered = await Promise.all(asked.map((msgId) => client.waitFor((m) => m.channel === 'shell' && m.parent_header.msg_id === msgId, 30_000)
      .then(() => true, () => false)));
    let cells = 0;
    for (let i = 0; i < CELLS && answered.every(Boolean); i++) {
      const run = await client.execute(`x = ${i}\nx`, 30_000).catch(() => undefined);
      if (run?.result !== String(i)) break;
      cells++;
    }
    return { early: answered.filter(Boolean).length, cells };
  }));
  t.same(replies, ids.map(() => ({ early: 3, cells: CELLS })), `each of ${KERNELS} kernels answered its 3 early requests and ${CELLS} cells`);
  // The connection file holds the kernel's signing key: read once by the bridge, then removed.
  t.same(readdirSync(tmpdir()).filter((name) => ids.some((id) => name.includes(id))), [], 'no connection file left in the temp directory');
  await Promise.all(ids.map((id) => http(service.url, 'DELETE', `/notebooks/api/kernels/${id}`)));
});
