// The warm-up's sessions (connect/warm-up.ts): its calls run in WARM_UP_SESSIONS sessions (or as
// many as asked: bench/connect-first.ts) one after another, each a new random id released at the
// end; a failure anywhere ends it. The "server" is a loopback HTTP/2 server that
// answers every call as Spark's would (OK; an ExecutePlan with Arrow rows and its last answer;
// ReleaseSession as 3.5 does, UNIMPLEMENTED, when asked) and records each call's session id.
import { createServer, type ServerHttp2Stream } from 'node:http2';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { decodeFields, encodeMessage, grpcFrame, grpcMessages } from '../../connect/protobuf.js';
import { WARM_UP_SESSIONS, warmUpServer } from '../../connect/warm-up.js';

/** ExecutePlanResponse { arrow_batch { row_count: 1 }, result_complete {} }: rows, and the last answer. */
const LAST_ANSWER_WITH_ROWS = encodeMessage([[2, [[1, 1]]], [14, []]]);
const UNIMPLEMENTED = '12';

interface Call { method: string; sessionId: string }

/** The fake server; `releaseUnimplemented`: answers ReleaseSession as a 3.5 server; `failAt`: the call (0-based) answered INTERNAL. */
async function fakeServer(t: Test, options: { releaseUnimplemented?: boolean; failAt?: number } = {}): Promise<{ port: number; calls: Call[] }> {
  const calls: Call[] = [];
  const server = createServer();
  server.on('stream', (stream: ServerHttp2Stream, headers) => {
    const method = String(headers[':path']).split('/').pop() ?? '';
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => {
      const [request] = grpcMessages(Buffer.concat(chunks));
      const id = decodeFields(request!).find((f) => f.field === 1)?.value;
      const index = calls.push({ method, sessionId: id instanceof Uint8Array ? Buffer.from(id).toString('utf8') : '' }) - 1;
      let status = '0';
      if (index === options.failAt) status = '13';
      else if (method === 'ReleaseSession' && options.releaseUnimplemented) status = UNIMPLEMENTED;
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': status, 'grpc-message': status === '0' ? '' : 'no' }));
      stream.end(method === 'ExecutePlan' && status === '0' ? grpcFrame(LAST_ANSWER_WITH_ROWS) : undefined);
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  t.teardown(() => new Promise<void>((ok) => server.close(() => ok())));
  return { port: (server.address() as AddressInfo).port, calls };
}

/** The calls grouped by session id, in the order the sessions came. */
function bySession(calls: Call[]): Map<string, string[]> {
  const sessions = new Map<string, string[]>();
  for (const { method, sessionId } of calls) sessions.set(sessionId, [...(sessions.get(sessionId) ?? []), method]);
  return sessions;
}

t.test('by default the warm-up runs its calls in WARM_UP_SESSIONS sessions', async (t) => {
  const server = await fakeServer(t);
  await warmUpServer({ host: '127.0.0.1', port: server.port }, '4.2.0', new AbortController().signal);
  const sessions = bySession(server.calls);
  t.equal(sessions.size, WARM_UP_SESSIONS);
  t.ok([...sessions.values()][0]!.includes('ExecutePlan'), 'running queries');
  t.equal([...sessions.values()][0]!.at(-1), 'ReleaseSession', 'and released at its end');
});

t.test('in more sessions (bench/connect-first.ts warmN), one after another, each released', async (t) => {
  const server = await fakeServer(t);
  await warmUpServer({ host: '127.0.0.1', port: server.port }, '4.2.0', new AbortController().signal, {}, undefined, 3);
  const sessions = bySession(server.calls);
  t.equal(sessions.size, 3, 'each in an id of its own');
  const [first, ...others] = [...sessions.values()];
  t.ok(first!.includes('ExecutePlan'), 'the first runs queries');
  for (const methods of others) t.same(methods, first, 'every session runs the same calls');
  for (const methods of sessions.values()) t.equal(methods.at(-1), 'ReleaseSession', 'and is released at its end');
  // Not interleaved: a session's calls all come before the next session's first.
  const order = server.calls.map((c) => c.sessionId).filter((id, i, all) => i === 0 || all[i - 1] !== id);
  t.equal(order.length, 3, 'one session after another');
});

t.test('the count of sessions can be given; a 3.5 server\'s UNIMPLEMENTED ReleaseSession is no failure', async (t) => {
  const server = await fakeServer(t, { releaseUnimplemented: true });
  await warmUpServer({ host: '127.0.0.1', port: server.port }, '3.5.7', new AbortController().signal, {}, undefined, 2);
  t.equal(bySession(server.calls).size, 2);
});

t.test('a call that fails in a later session fails the warm-up, and no session follows it', async (t) => {
  const probe = await fakeServer(t);
  await warmUpServer({ host: '127.0.0.1', port: probe.port }, '4.2.0', new AbortController().signal, {}, undefined, 1);
  const perSession = probe.calls.length;
  const server = await fakeServer(t, { failAt: perSession + 1 }); // the second session's second call
  await t.rejects(warmUpServer({ host: '127.0.0.1', port: server.port }, '4.2.0', new AbortController().signal, {}, undefined, 3), /gRPC status 13/);
  t.equal(bySession(server.calls).size, 2, 'the third session never started');
  t.equal(server.calls.length, perSession + 2, 'nothing after the failed call');
});
