// How the relay (connect/relay.ts) ends a client's call when the Connect server ends its leg
// without an answer: a small node:http2 "server" in place of Spark's, the relay in a node:http2
// endpoint, a node:http2 client. A server that resets the call (CANCEL, as gRPC's servers cancel
// one; NO_ERROR) or whose connection closes before any response headers gives Node no 'error'
// event on the relay's upstream stream, only its 'close': the relay answered only resets after
// headers, so the client's call stayed open for good (pyspark's calls have no deadline: its
// query waits for ever). Each case also runs the relay's onDone once (the session's open calls).
// Before the fix the two cases before headers failed here at their bound, the call still open.
import { type ClientHttp2Stream, connect, constants, createServer, type Http2Server, type IncomingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { GrpcStatus } from '../../connect/grpc-status.js';
import { relay, Upstreams } from '../../connect/relay.js';

const grpcHeaders = { ':method': 'POST', 'content-type': 'application/grpc' };

/** What the fake Connect server does with a call, by its path. */
const BEHAVIOURS: Record<string, (stream: ServerHttp2Stream) => void> = {
  '/answer': (stream) => {
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.once('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
    stream.end(Buffer.from([0, 0, 0, 0, 0]));
  },
  '/reset-cancel': (stream) => stream.close(constants.NGHTTP2_CANCEL),
  '/reset-no-error': (stream) => stream.close(constants.NGHTTP2_NO_ERROR),
  '/reset-after-headers': (stream) => {
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' });
    stream.write(Buffer.from([0, 0, 0, 0, 0]), () => stream.close(constants.NGHTTP2_CANCEL));
  },
  // The server goes away: its connection closes under the call.
  '/connection-gone': (stream) => stream.session?.destroy(),
};

async function listen(t: Test, server: Http2Server): Promise<number> {
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  t.teardown(() => new Promise<void>((ok) => server.close(() => ok())));
  return (server.address() as AddressInfo).port;
}

/** The fake Connect server, the endpoint relaying to it (counting onDone), and a client connection to the endpoint. */
async function setUp(t: Test) {
  const upstreamServer = createServer();
  upstreamServer.on('stream', (stream, headers) => {
    stream.on('error', () => { /* reset by the relay */ });
    stream.resume();
    BEHAVIOURS[String(headers[':path'])]?.(stream);
  });
  const upstreamPort = await listen(t, upstreamServer);
  const upstreams = new Upstreams();
  t.teardown(() => upstreams.close());
  const done: string[] = [];
  const endpoint = createServer();
  endpoint.on('stream', (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => {
    stream.on('error', () => { /* a reset call */ });
    const path = String(headers[':path']);
    relay({ stream, headers, head: [], bodyEnded: false }, upstreams.get({ host: '127.0.0.1', port: upstreamPort }), {},
      async () => 'its application ended', () => done.push(path));
  });
  const client = connect(`http://127.0.0.1:${await listen(t, endpoint)}`);
  client.on('error', () => { /* reported per call */ });
  t.teardown(() => client.destroy());
  return { client, done };
}

interface Ending { status?: number; grpcStatus?: string; grpcMessage?: string; rstCode?: number }

/** Makes a call and waits for its end: a trailers-only status, trailers, or a reset. Bounded: a call left open fails. */
function call(client: ReturnType<typeof connect>, path: string, waitMs = 20_000): Promise<Ending> {
  return new Promise((resolve, reject) => {
    const request: ClientHttp2Stream = client.request({ ...grpcHeaders, ':path': path });
    const ending: Ending = {};
    const bound = setTimeout(() => { request.close(constants.NGHTTP2_CANCEL); reject(new Error(`the call ${path} was still open after ${waitMs} ms`)); }, waitMs);
    request.on('response', (headers) => Object.assign(ending, { status: headers[':status'], grpcStatus: headers['grpc-status'], grpcMessage: headers['grpc-message'] }));
    request.on('trailers', (trailers) => Object.assign(ending, { grpcStatus: trailers['grpc-status'] }));
    request.on('error', () => { /* the reset shows in rstCode */ });
    request.on('close', () => { clearTimeout(bound); resolve({ ...ending, rstCode: request.rstCode }); });
    request.resume();
    request.end(Buffer.from([0, 0, 0, 0, 0]));
  });
}

t.test('an answer with trailers is relayed as it came', async (t) => {
  const { client, done } = await setUp(t);
  const ending = await call(client, '/answer');
  t.match(ending, { status: 200, grpcStatus: '0', rstCode: constants.NGHTTP2_NO_ERROR });
  t.same(done, ['/answer'], 'onDone ran once');
});

t.test('a reset after the response headers: the client\'s call is reset the same way', async (t) => {
  const { client, done } = await setUp(t);
  const ending = await call(client, '/reset-after-headers');
  t.match(ending, { status: 200, rstCode: constants.NGHTTP2_CANCEL });
  t.same(done, ['/reset-after-headers']);
});

t.test('a reset before any response headers: the client\'s call is reset the same way, not left open', async (t) => {
  const { client, done } = await setUp(t);
  const cancelled = await call(client, '/reset-cancel');
  t.equal(cancelled.status, undefined, 'no answer was made up');
  t.equal(cancelled.rstCode, constants.NGHTTP2_CANCEL, 'CANCEL, as the server reset it (gRPC clients show CANCELLED)');
  const noError = await call(client, '/reset-no-error');
  t.equal(noError.rstCode, constants.NGHTTP2_NO_ERROR, 'NO_ERROR, as the server reset it');
  t.same(done.sort(), ['/reset-cancel', '/reset-no-error']);
});

t.test('the server\'s connection closes before any response headers: the client is told, as when it cannot be reached', async (t) => {
  const { client, done } = await setUp(t);
  const ending = await call(client, '/connection-gone');
  t.equal(ending.status, 200);
  t.equal(ending.grpcStatus, String(GrpcStatus.FAILED_PRECONDITION), 'the session\'s end was asked for and told');
  t.match(decodeURIComponent(ending.grpcMessage ?? ''), /its application ended/);
  t.same(done, ['/connection-gone']);
});
