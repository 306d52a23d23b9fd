// The slow-client probe: 100 clients that send their request a byte at a time (half the body
// of a submission, half the headers of the dashboard login) are all cut off by the request
// timeout (answered 408, none before it), while ordinary requests keep being served.
import { connect, type Socket } from 'node:net';
import t from 'tap';
import { startTestApi } from '../helpers/api.js';

// Long enough that a normal request is answered while they are held even on a loaded machine
// (two hogs at load 30: a first, cold request took 11 s, past a 2 s timeout).
const REQUEST_TIMEOUT_MS = 10_000;

interface Probe { socket: Socket; closedAfterMs?: number; answer: string }

function slowClient(port: number, kind: 'body' | 'headers', started: number): Probe {
  const socket = connect(port, '127.0.0.1');
  const probe: Probe = { socket, answer: '' };
  const head = kind === 'body'
    ? 'POST /api/apps/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{'
    : 'POST /dashboard/login HTTP/1.1\r\nHost: 127.0.0.1\r\n';
  socket.write(head);
  // One more byte (or header line) every 200 ms: never idle, never done.
  const drip = setInterval(() => { if (!socket.destroyed) socket.write(kind === 'body' ? ' ' : 'X-Slow: 1\r\n'); }, 200);
  socket.on('data', (chunk) => { probe.answer += chunk.toString(); });
  socket.on('error', () => undefined); // a reset is a way of being closed
  socket.on('close', () => { clearInterval(drip); probe.closedAfterMs = Date.now() - started; });
  return probe;
}

t.test('100 slow clients are closed by the request timeout while normal requests are served', async (t) => {
  const api = await startTestApi(t, { limits: { requestTimeoutMs: REQUEST_TIMEOUT_MS, headersTimeoutMs: REQUEST_TIMEOUT_MS, checkIntervalMs: 250 } });
  await api.app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = api.app.server.address() as { port: number };
  t.equal((await fetch(`http://127.0.0.1:${port}/api/apps/`)).status, 200, 'served before (the route warm)');
  const started = Date.now();
  const probes = Array.from({ length: 100 }, (_, i) => slowClient(port, i % 2 ? 'body' : 'headers', started));
  t.teardown(() => { for (const p of probes) p.socket.destroy(); });

  // Meanwhile: ordinary requests, until every slow client is closed (a safety net of minutes, no time decides).
  const open = () => probes.filter((p) => p.closedAfterMs === undefined).length;
  const latencies: number[] = [];
  let servedWhileHeld = 0;
  while (open() > 0 && Date.now() - started < 300_000) {
    const begun = Date.now();
    const res = await fetch(`http://127.0.0.1:${port}/api/apps/`);
    t.equal(res.status, 200);
    await res.arrayBuffer();
    latencies.push(Date.now() - begun);
    if (open() > 0) servedWhileHeld++;
    await new Promise((ok) => setTimeout(ok, 100));
  }
  const closed = probes.filter((p) => p.closedAfterMs !== undefined);
  t.equal(closed.length, 100, `all 100 slow clients closed (slowest after ${Math.max(...closed.map((p) => p.closedAfterMs!))} ms)`);
  t.ok(closed.every((p) => p.closedAfterMs! >= REQUEST_TIMEOUT_MS - 100), 'none before the timeout');
  t.ok(probes.filter((p) => p.answer.startsWith('HTTP/1.1 408')).length > 0, 'answered 408 Request Timeout');
  t.ok(servedWhileHeld > 0, `normal requests served while slow clients were held (${servedWhileHeld} of ${latencies.length})`);
  t.comment(`normal requests: slowest ${Math.max(...latencies)} ms of ${latencies.length} (a figure, not a check)`);
});
