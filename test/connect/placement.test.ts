// Where sessions' Connect servers run: local mode's loopback ports, or (Kubernetes mode) Connect's
// own port on each driver pod's IP, known only once the pod runs. The sessions wait for that
// address and a listening server, and the relay dials it. A fake API stands in for the service.
import { createServer, type AddressInfo, type Server } from 'node:net';
import { pino } from 'pino';
import t from 'tap';
import type { FastifyBaseLogger } from 'fastify';
import { GrpcStatus } from '../../connect/grpc-status.js';
import { authorityOf, loopbackPlacement, podPlacement } from '../../connect/placement.js';
import type { ConnectApp, ServiceApi } from '../../connect/service-api.js';
import { ConnectSessions } from '../../connect/sessions.js';

const log = pino({ enabled: false }) as unknown as FastifyBaseLogger;

/** The service's API as the sessions use it: submissions recorded, the application's state as the test sets it. */
function fakeApi(state: () => string) {
  const submitted: Array<Record<string, any>> = [];
  const api = {
    template: () => Promise.reject(new Error('no templates here')),
    submit: (body: Record<string, any>) => { submitted.push(body); return Promise.resolve({ appName: 'connect-app', state: 'SUBMITTED' }); },
    get: (): Promise<ConnectApp> => Promise.resolve({ appName: 'connect-app', state: state() }),
    stop: () => Promise.resolve(),
  };
  return { api: api as unknown as ServiceApi, submitted };
}

async function listeningServer(t: { teardown(fn: () => unknown): void }): Promise<Server> {
  const server = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise((resolve) => server.close(resolve)));
  return server;
}

t.test('a pod\'s server: the session waits for the pod\'s IP, then for the server on Connect\'s port there', async (t) => {
  const server = await listeningServer(t);
  const port = (server.address() as AddressInfo).port;
  let asked = 0;
  // The pod runs (has an IP) from the third look on.
  const placement = podPlacement(port, (appName) => { t.equal(appName, 'connect-app'); return Promise.resolve(++asked >= 3 ? '127.0.0.1' : undefined); });
  const { api, submitted } = fakeApi(() => 'RUNNING');
  const sessions = new ConnectSessions({ api, log, defaultVersion: '4.2.0', serverJars: () => undefined, idleMs: 0, probeMs: 1, placement, sessionClaims: async () => [] });
  const session = await sessions.acquire({ id: 'alice', key: 'k' }, 'a5f0c2de-0000-4000-8000-000000000001', undefined);
  t.same(session.server, { host: '127.0.0.1', port }, 'reached on the pod\'s IP');
  t.ok(asked >= 3, 'asked for the pod\'s IP until it had one');
  t.equal(submitted[0]!.configOverrides.engineConf['spark.connect.grpc.binding.port'], String(port), 'the server listens on the placement\'s port');
  t.equal(authorityOf({ host: 'fd00::5', port: 15002 }), '[fd00::5]:15002', 'an IPv6 pod IP in brackets');
});

t.test('an application that ends before its pod runs fails the session with its state, and it is forgotten', async (t) => {
  const placement = podPlacement(15002, () => Promise.resolve(undefined));
  const { api } = fakeApi(() => 'FAILED');
  const sessions = new ConnectSessions({ api, log, defaultVersion: '4.2.0', serverJars: () => undefined, idleMs: 0, probeMs: 1, placement, sessionClaims: async () => [] });
  const refused = await sessions.acquire({ id: 'alice', key: 'k' }, 'a5f0c2de-0000-4000-8000-000000000002', undefined).then(() => undefined, (error: { code?: number; message: string }) => error);
  t.equal(refused?.code, GrpcStatus.FAILED_PRECONDITION);
  t.match(refused?.message, /ended FAILED before its server answered/);
  t.equal(sessions.sessions.size, 0);
});

t.test('local mode: a free loopback port per session, reached on 127.0.0.1', async (t) => {
  const port = await loopbackPlacement.port();
  t.ok(port > 0);
  t.same(await loopbackPlacement.address('any', port), { host: '127.0.0.1', port });
});
