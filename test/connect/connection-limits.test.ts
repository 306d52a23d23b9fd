// What one client may hold of the Spark Connect endpoint (connect/connection-limits.ts): the
// endpoint's own HTTP/2 server, with node's HTTP/2 client as the peer. Connections over one
// address's cap are closed at once; a connection with no call open is closed once idle, one with
// a call open is kept; one key's calls beyond its cap are refused RESOURCE_EXHAUSTED while another
// key's go on. Before these limits the endpoint took every connection and call it was sent.
import { connect, constants, type ClientHttp2Session, type ClientHttp2Stream } from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import { pino } from 'pino';
import t, { type Test } from 'tap';
import type { ConnectLimits } from '../../connect/connection-limits.js';
import { createConnectEndpoint } from '../../connect/endpoint.js';
import { Upstreams } from '../../connect/relay.js';
import type { ConnectSessions } from '../../connect/sessions.js';

const KEYS: Record<string, { id: string; role: 'user' }> = { 'key-a': { id: 'a', role: 'user' }, 'key-b': { id: 'b', role: 'user' } };

async function endpoint(t: Test, limits: ConnectLimits): Promise<string> {
  // No call gets past its session id in these tests, so no session is ever asked for.
  const sessions = { upstreams: new Upstreams() } as unknown as ConnectSessions;
  const server = createConnectEndpoint({ auth: { enabled: true, store: { verify: (key) => KEYS[key] } }, sessions, log: pino({ enabled: false }) as unknown as FastifyBaseLogger, limits });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  // Not waited for: the clients (each test's own) are destroyed by their own teardowns.
  t.teardown(() => { server.close(); });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function client(t: Test, url: string): ClientHttp2Session {
  const session = connect(url);
  session.on('error', () => undefined);
  t.teardown(() => { session.destroy(); });
  return session;
}

const closed = (session: ClientHttp2Session) => new Promise<void>((ok) => { if (session.closed || session.destroyed) ok(); else session.once('close', ok); });

/** A plain GET: the endpoint answers 415 (not gRPC), which shows the connection serves; 0: no answer (closed). */
function answers(session: ClientHttp2Session): Promise<number> {
  return new Promise((ok) => {
    if (session.closed || session.destroyed) return ok(0);
    const request = session.request({ ':method': 'GET', ':path': '/' });
    request.once('response', (headers) => ok(Number(headers[':status'])));
    request.on('error', () => ok(0));
    request.once('close', () => ok(0));
    request.resume();
    request.end();
  });
}

/** A gRPC call by `key`; `body`: its first bytes (none: the call stays open, waiting for them). */
function call(session: ClientHttp2Session, key: string, body?: Buffer): { stream: ClientHttp2Stream; status: Promise<string> } {
  const stream = session.request({ ':method': 'POST', ':path': '/spark.connect.SparkConnectService/ExecutePlan', 'content-type': 'application/grpc', authorization: `Bearer ${key}` });
  stream.on('error', () => undefined);
  const status = new Promise<string>((ok) => {
    stream.once('response', (headers) => { if (headers['grpc-status'] !== undefined) ok(String(headers['grpc-status'])); });
    stream.once('trailers', (trailers) => ok(String(trailers['grpc-status'])));
    stream.once('close', () => ok('closed'));
  });
  stream.resume();
  if (body) stream.end(body);
  return { stream, status };
}

// A whole gRPC message with an empty body: it has no session id (INVALID_ARGUMENT, 3), which shows the call got past the limits.
const EMPTY_MESSAGE = Buffer.from([0, 0, 0, 0, 0]);

t.test('one address holds at most its cap of connections; the next is closed, the others serve', async (t) => {
  const url = await endpoint(t, { maxConnections: 100, perAddress: 2, idleMs: 0, callsPerKey: 64 });
  const [first, second] = [client(t, url), client(t, url)];
  t.equal(await answers(first), 415);
  t.equal(await answers(second), 415);
  const third = client(t, url);
  await closed(third);
  t.pass('the third connection from the same address was closed');
  t.equal(await answers(first), 415, 'the first two still serve');
  first.destroy();
  await closed(first);
  // Its slot is freed once the server sees the close: a new connection is taken again, eventually.
  let served = false;
  for (let i = 0; i < 50 && !served; i++) {
    const next = client(t, url);
    served = (await answers(next)) === 415;
  }
  t.ok(served, 'a closed connection frees its slot');
});

t.test('a connection with no call open is closed once idle; one with a call open is kept', async (t) => {
  const url = await endpoint(t, { maxConnections: 100, perAddress: 0, idleMs: 300, callsPerKey: 64 });
  const busy = client(t, url);
  const open = call(busy, 'key-a');
  const idle = client(t, url);
  t.equal(await answers(idle), 415);
  await closed(idle);
  t.pass('the idle connection was closed');
  t.notOk(busy.closed || busy.destroyed, 'the connection with a call open is kept');
  open.stream.end(EMPTY_MESSAGE);
  t.equal(await open.status, '3', 'and its call is still answered');
});

t.test('one key\'s calls beyond its cap are refused RESOURCE_EXHAUSTED; another key\'s go on; an ended call frees its slot', async (t) => {
  const url = await endpoint(t, { maxConnections: 100, perAddress: 0, idleMs: 0, callsPerKey: 2 });
  const session = client(t, url);
  const held = [call(session, 'key-a'), call(session, 'key-a')];
  t.equal(await answers(session), 415);
  t.equal(await call(session, 'key-a', EMPTY_MESSAGE).status, String(8), 'the third open call of key a: RESOURCE_EXHAUSTED');
  t.equal(await call(session, 'key-b', EMPTY_MESSAGE).status, '3', 'key b is not held back by key a');
  t.equal(await call(session, 'nobody', EMPTY_MESSAGE).status, '16', 'no valid key: UNAUTHENTICATED, whatever the caps');
  held[0]!.stream.close(constants.NGHTTP2_CANCEL);
  await held[0]!.status;
  let status = '8';
  for (let i = 0; i < 50 && status === '8'; i++) status = await call(session, 'key-a', EMPTY_MESSAGE).status;
  t.equal(status, '3', 'once one of its calls ended, key a calls again');
});
