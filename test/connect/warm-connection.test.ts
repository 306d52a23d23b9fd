// A warm pool's server is warmed up over the connection the relay then uses (connect/sessions.ts
// upstreams): the session's first call finds it open instead of dialling the server anew. The
// "server" is a loopback HTTP/2 server answering the warm-up's gRPC calls as Spark's would (OK,
// and Arrow rows with the last answer), counting the connections that carried calls (the pool's
// and the sessions' TCP probes connect too, and call nothing).
import { createServer, type Http2Server, type ServerHttp2Stream } from 'node:http2';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { encodeMessage, grpcFrame } from '../../connect/protobuf.js';
import type { ServiceApi } from '../../connect/service-api.js';
import { ConnectSessions } from '../../connect/sessions.js';
import { silentLog } from '../gateway/scripted-kernel.js';
import { until } from '../helpers/poll.js';

/** ExecutePlanResponse { arrow_batch { row_count: 1 }, result_complete {} }: rows, and the last answer. */
const LAST_ANSWER_WITH_ROWS = encodeMessage([[2, [[1, 1]]], [14, []]]);

async function fakeConnectServer(t: Test): Promise<{ port: number; connections: () => number; accepted: () => number; calls: string[] }> {
  const carriers = new Set<unknown>();
  const calls: string[] = [];
  let accepted = 0;
  const server: Http2Server = createServer();
  server.on('connection', () => { accepted++; });
  server.on('stream', (stream: ServerHttp2Stream, headers) => {
    carriers.add(stream.session);
    const method = String(headers[':path']).split('/').pop() ?? '';
    calls.push(method);
    stream.on('data', () => undefined);
    stream.on('end', () => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
      stream.end(method === 'ExecutePlan' ? grpcFrame(LAST_ANSWER_WITH_ROWS) : undefined);
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  t.teardown(() => new Promise<void>((ok) => server.close(() => ok())));
  return { port: (server.address() as AddressInfo).port, connections: () => carriers.size, accepted: () => accepted, calls };
}

t.test('a pooled server\'s first session is relayed over the connection its warm-up opened', async (t) => {
  const server = await fakeConnectServer(t);
  const api = {
    template: async () => ({ name: 'small', config: {} }),
    submit: async () => ({ appName: 'dry', state: 'PENDING' }),
    claim: async () => undefined,
    get: async (appName: string) => ({ appName, state: 'RUNNING' }),
    stop: async () => undefined,
  } as unknown as ServiceApi;
  const sessions = new ConnectSessions({
    api, log: silentLog, defaultVersion: '4.2.0', serverJars: () => undefined, idleMs: 0, sessionClaims: async () => [],
    placement: { port: async () => server.port, address: async () => ({ host: '127.0.0.1', port: server.port }), token: () => undefined },
    stopApp: async () => undefined,
    // No warmUp of the test's own: the real one (connect/warm-up.ts), against the fake server.
    warm: { sizes: new Map([[undefined, 1]]), submit: async () => ({ appName: 'warm-1', state: 'RUNNING' }), get: async (appName) => ({ appName, state: 'RUNNING' }), templateVersion: async () => null, checkMs: 3_600_000 },
  });
  t.teardown(() => sessions.close());
  await until(() => sessions.pool?.status()[0]?.ready === 1, { what: 'a ready warm server' });
  t.ok(server.calls.includes('ExecutePlan') && server.calls.includes('ReleaseSession'), 'the warm-up ran its calls on the server');
  t.equal(server.connections(), 1, 'over one connection');

  const accepted = server.accepted();
  const session = await sessions.acquire({ id: 'key-a', key: 'ssk_a' }, 'session-1', undefined);
  t.equal(session.appName, 'warm-1', 'the session has the pooled server');
  t.equal(server.accepted(), accepted, 'handed out with no TCP probe: its connection is up, on this machine');
  const upstream = sessions.upstreams.get(session.server!);
  t.notOk(upstream.closed || upstream.destroyed, 'the relay finds its connection open');
  const answered = await new Promise<string>((ok) => {
    const call = upstream.request({ ':method': 'POST', ':path': '/spark.connect.SparkConnectService/Config', 'content-type': 'application/grpc' });
    call.on('trailers', (trailers) => ok(String(trailers['grpc-status'])));
    call.on('data', () => undefined);
    call.end(grpcFrame(encodeMessage([[1, 'session-1']])));
  });
  t.equal(answered, '0', 'the session\'s first call is answered');
  t.equal(server.connections(), 1, 'with no new connection to the server');
});
