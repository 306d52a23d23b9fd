// Runs alone (scripts/test.sh): 20 kernels are 20 JVMs, enough to starve any test beside them.
// Several kernels started at once all become idle (they start beside each other: kernels hold
// no batch cores in local mode), and a websocket that reconnects with the same session_id
// receives the iopub output it missed and the reply to its request (the replay buffer).
import { join } from 'node:path';
import t from 'tap';
import { until } from '../helpers/poll.js';
import { http, realSpark, sparkEnv, startService } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';
import { KernelClient } from './jupyter.js';

const skip = !realSpark() ? 'needs the Spark virtualenv' : false;
/** The acceptance's 20 (80 s and 5.7 GB at most on 2 cores: each kernel has its JVM); fewer with GATEWAY_TEST_KERNELS. */
const COUNT = Number(process.env.GATEWAY_TEST_KERNELS ?? 20);

t.test(`${COUNT} kernels started at once all become idle; missed output is replayed`, { skip, timeout: 900_000 }, async (t) => {
  const dataDir = join(tempDir(t), 'data');
  const service = await startService(t, { dataDir, env: sparkEnv(), args: ['--cores', '2'] });
  const ws = service.url.replace('http', 'ws');
  // A batch application that holds every core first: kernels must not wait behind it. It holds
  // them in the service's count and sleeps (a pi.py of 200 partitions used to burn both cores).
  const batch = await http(service.url, 'POST', '/api/apps/', {
    jobName: 'hog', configOverrides: { type: 'Python', mainApplicationFile: `local://${join(import.meta.dirname, '..', 'fixtures', 'recurring', 'sleeps.py')}`, arguments: ['900'], executor: { cores: 2 } },
  });
  t.equal(batch.status, 201, batch.text);

  const started = Date.now();
  const created = await Promise.all(Array.from({ length: COUNT }, () => http(service.url, 'POST', '/notebooks/api/kernels', { name: 'default' })));
  t.ok(created.every((c) => c.status === 201), 'every start accepted');
  const ids = created.map((c) => c.json.id as string);
  const clients = await Promise.all(ids.map((id) => new KernelClient(`${ws}/notebooks/api/kernels/${id}/channels`).open(t)));
  const results = await Promise.all(clients.map((c, i) => c.execute(`${i} * 10`, 600_000)));
  t.same(results.map((r) => r.result), ids.map((_, i) => String(i * 10)), `all ${COUNT} answered (${((Date.now() - started) / 1000).toFixed(1)} s)`);
  const models = (await http(service.url, 'GET', '/notebooks/api/kernels')).json as Array<{ id: string; execution_state: string }>;
  t.same(ids.map((id) => models.find((m) => m.id === id)?.execution_state), ids.map(() => 'idle'), 'all idle');

  // Replay: a client goes away while its cell prints, then reconnects with the same session_id.
  const first = clients[0];
  const asked = first.send('shell', 'execute_request', { code: 'import time\nfor i in range(5):\n    print("line", i, flush=True)\n    time.sleep(0.4)', silent: false, store_history: true, user_expressions: {}, allow_stdin: false });
  // Its own first line (a loaded JVM may write warnings to the kernel's stderr before it).
  await first.waitFor((m) => m.header.msg_type === 'stream' && String(m.content.text).includes('line 0'), 30_000);
  first.ws.terminate();
  // The gateway's model says when the socket is gone and the cell is done: every later line was missed.
  await until(async () => {
    const model = (await http(service.url, 'GET', `/notebooks/api/kernels/${ids[0]}`)).json as { execution_state: string; connections: number };
    return model.connections === 0 && model.execution_state === 'idle';
  }, { timeoutMs: 120_000, intervalMs: 100, what: 'the cell to end with no client attached' });
  const again = await new KernelClient(`${ws}/notebooks/api/kernels/${ids[0]}/channels`, first.sessionId).open(t);
  await again.waitFor((m) => m.header.msg_type === 'stream' && String(m.content.text).includes('line 4'), 60_000);
  const seen = [...first.messages, ...again.messages].filter((m) => m.header.msg_type === 'stream').map((m) => String(m.content.text)).join('');
  t.same(seen.match(/line \d/g), ['line 0', 'line 1', 'line 2', 'line 3', 'line 4'], 'every line once: what was missed came on reconnect');
  const reply = await again.waitFor((m) => m.header.msg_type === 'execute_reply' && m.parent_header.msg_id === asked, 60_000);
  t.equal(reply.content.status, 'ok', 'the reply to the request of the closed socket came too');

  await Promise.all(ids.map((id) => http(service.url, 'DELETE', `/notebooks/api/kernels/${id}`)));
});
