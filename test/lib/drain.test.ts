// lib/drain.ts on a real HTTP server: while draining, answers say `Connection: close` (so a
// client's next request opens a new connection, which a Service sends to another pod), and
// run() resolves only once the request being worked on has its answer.
import { createServer, request, Agent } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { Drain } from '../../lib/drain.js';

function get(agent: Agent, port: number, path: string): Promise<{ status: number; connection: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    request({ agent, port, host: '127.0.0.1', path }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => { body += chunk; });
      res.on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection, body }));
    }).on('error', reject).end();
  });
}

t.test('a draining server closes connections after each answer and waits for work in hand', async (t) => {
  let release: () => void = () => undefined;
  let started: () => void = () => undefined;
  const slowStarted = new Promise<void>((resolve) => { started = resolve; });
  const server = createServer((req, res) => {
    if (req.url === '/slow') {
      release = () => res.end('slow done');
      started();
      return;
    }
    res.end('quick');
  });
  const drain = new Drain();
  drain.attach(server);
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  t.teardown(() => new Promise<void>((ok) => { server.closeAllConnections(); server.close(() => ok()); }));
  const { port } = server.address() as AddressInfo;
  const agent = new Agent({ keepAlive: true });
  t.teardown(() => agent.destroy());

  t.equal((await get(agent, port, '/')).connection, 'keep-alive', 'before: connections are kept');
  const slow = get(agent, port, '/slow');
  await slowStarted;
  t.equal(drain.working, 1, 'one request is being worked on');

  let drained = false;
  const running = drain.run(0).then(() => { drained = true; });
  const during = await get(agent, port, '/');
  t.equal(during.body, 'quick', 'a request while draining is still served');
  t.equal(during.connection, 'close', 'with Connection: close');
  t.equal(drained, false, 'run() waits while a request has no answer');

  release();
  t.equal((await slow).body, 'slow done', 'the request in hand gets its answer');
  await running;
  t.equal(drain.working, 0);
  t.ok(drain.active);
});
