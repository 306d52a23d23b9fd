// A Spark Connect session reached through another replica of the API (Kubernetes mode: the
// chart's Service keeps a client on one replica by its address, which a NAT, a proxy or a replica
// that died can change). Two endpoints' sessions ("replicas") share one real API, as replicas
// share the apiserver: the second finds the session's application by its label and takes it over
// for its owner; another key is refused with no side effect; an ended session stays ended. A
// replica dropped without a drain leaves its session, and its warm pool's server, to the others'
// orphan sweep.
// Drivers are the fake-spark-submit TEST DOUBLE; a TCP listener stands in for the Connect server.
import { createServer, type AddressInfo } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import { pino } from 'pino';
import t from 'tap';
import { GrpcStatus } from '../../connect/grpc-status.js';
import { GATEWAY_PROOF_HEADER } from '../../lib/gateway-proof.js';
import { podPlacement } from '../../connect/placement.js';
import { CONNECT_SESSION_LABEL, WARM_SESSION } from '../../connect/server-app.js';
import { ServiceApi } from '../../connect/service-api.js';
import { connectServers, warmVia } from '../../cli/connect-wiring.js';
import { ConnectSessions, type SessionsOptions } from '../../connect/sessions.js';
import { activityOf, CONNECT_ACTIVITY_LABEL, markEvery, orphanAfter, type SharedActivity } from '../../connect/shared-activity.js';
import { FileKeyStore } from '../../submit-api/auth/key-store.js';
import { FakeClock } from '../gateway/fake-clock.js';
import { startTestApi } from '../helpers/api.js';
import { until } from '../helpers/poll.js';
import { tempDir } from '../helpers/temp.js';

const log = pino({ enabled: false }) as unknown as FastifyBaseLogger;

/** The API's proof, which the endpoint's submissions carry (a session's labels are the endpoint's alone). */
const PROOF = 'the-service-proof';

/** The real API client, whose drivers (the test double) stay up as a Connect server would. */
class LastingDrivers extends ServiceApi {
  override submit(submission: Record<string, unknown>, key: string | undefined, options: { dryRun?: boolean } = {}) {
    const overrides = submission.configOverrides as Record<string, unknown>;
    return super.submit({ ...submission, configOverrides: { ...overrides, arguments: ['sleep=600'] } }, key, options);
  }
}

async function setUp(t: Parameters<typeof tempDir>[0]) {
  const store = new FileKeyStore(tempDir(t));
  const [a, b] = [store.create('user', 'A'), store.create('user', 'B')];
  const api = await startTestApi(t, { cores: 4, auth: { enabled: true, store }, gatewayProof: PROOF });
  await api.app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(api.app.server.address() as AddressInfo).port}`;
  const server = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise((resolve) => server.close(resolve)));
  const placement = podPlacement((server.address() as AddressInfo).port, () => Promise.resolve('127.0.0.1'));
  // Shared activity as Kubernetes mode wires it (cli/connect-kubernetes.ts), over the local cluster's labels.
  const activity: SharedActivity = {
    mark: (appName, at) => api.cluster.setLabels(appName, { [CONNECT_ACTIVITY_LABEL]: String(at) }),
    read: async (appName) => activityOf((await api.cluster.get(appName))?.labels),
  };
  /** A replica; `drained: false`: one that will be killed without a drain (nothing closes it). */
  const replica = (idleMs = 0, more: Partial<SessionsOptions> = {}, { drained = true } = {}) => {
    const sessions = new ConnectSessions({
      api: new LastingDrivers(() => base, PROOF), log, defaultVersion: '3.5.7', serverJars: () => undefined, idleMs, probeMs: 5, placement, activity,
      // As both modes wire it (cli/connect-wiring.ts): the cluster's own read, whoever's the applications are.
      sessionClaims: async (sessionId) => (await api.cluster.list({ labels: { [CONNECT_SESSION_LABEL]: sessionId }, limit: 20 })).items,
      ...more,
    });
    if (drained) t.teardown(() => sessions.close());
    return sessions;
  };
  const appsOf = async (sessionId: string) => {
    const listed = await api.call('GET', `/api/apps/?labelSelector=${encodeURIComponent(`${CONNECT_SESSION_LABEL}=${sessionId}`)}`, undefined, { 'x-api-key': a.key });
    return (listed.json.items as Array<{ appName: string; state: string }>);
  };
  return { a, b, first: replica(), second: replica(), replica, appsOf, api, base };
}

const refusal = (promise: Promise<unknown>) => promise.then(() => undefined, (error: { code?: number; message: string }) => error);

t.test('a session started through one replica is taken over by another for its owner, refused to another key, and stays ended once ended', async (t) => {
  const { a, b, first, second, replica, appsOf } = await setUp(t);
  const sessionId = 'b2c0ffee-0000-4000-8000-00000000000a';
  const started = await first.acquire({ id: a.id, key: a.key }, sessionId, undefined);
  first.release(started);
  t.equal((await appsOf(sessionId)).length, 1, 'one application for the session');

  const other = await refusal(second.acquire({ id: b.id, key: b.key }, sessionId, undefined));
  t.equal(other?.code, GrpcStatus.PERMISSION_DENIED, "another key on the second replica: the owner's rule holds there too");
  t.notOk(second.sessions.has(sessionId), 'nothing kept for it');
  t.equal((await appsOf(sessionId)).length, 1, 'and nothing submitted');

  const taken = await second.acquire({ id: a.id, key: a.key }, sessionId, undefined);
  second.release(taken);
  t.equal(taken.appName, started.appName, 'the owner on the second replica reaches the same application');
  t.same(taken.server, started.server, 'and its server');
  t.equal((await appsOf(sessionId)).length, 1, 'no second application was started');

  await first.end(started, 'the test ended it');
  // A replica that never held it (the second holds it until a call finds its server gone).
  const ended = await refusal(replica().acquire({ id: a.id, key: a.key }, sessionId, undefined));
  t.equal(ended?.code, GrpcStatus.FAILED_PRECONDITION, 'an ended session is not started again through another replica');
  t.match(ended?.message, /has ended \(its application .* is KILLED\)/);
  t.equal((await appsOf(sessionId)).length, 1, 'still the one application');
});

t.test('a session id no replica started is a new session, as before', async (t) => {
  const { a, second, appsOf } = await setUp(t);
  const sessionId = 'b2c0ffee-0000-4000-8000-00000000000b';
  const session = await second.acquire({ id: a.id, key: a.key }, sessionId, undefined);
  second.release(session);
  const apps = await appsOf(sessionId);
  t.same(apps.map((app) => app.appName), [session.appName], 'submitted here, once');
});

t.test('a session taken over is not culled by the replica that started it while it is in use through another', async (t) => {
  const { a, replica, api } = await setUp(t);
  const idleMs = 60_000;
  const [first, second] = [replica(idleMs), replica(idleMs)];
  const sessionId = 'b2c0ffee-0000-4000-8000-00000000000c';
  const started = await first.acquire({ id: a.id, key: a.key }, sessionId, undefined);
  first.release(started);
  const taken = await second.acquire({ id: a.id, key: a.key }, sessionId, undefined);
  second.release(taken);
  const state = async () => (await api.cluster.get(started.appName!))?.state;
  // The label is written in the background: wait (bounded) until the cache has it.
  for (let i = 0; i < 500 && activityOf((await api.cluster.get(started.appName!))?.labels) === undefined; i++) await new Promise((resolve) => setImmediate(resolve));
  t.ok(activityOf((await api.cluster.get(started.appName!))?.labels), 'the replica that took it over wrote its activity onto the application');

  // The first replica's own last call is longer ago than the idle time, but the second's is not.
  await first.cull(started.lastActivity + idleMs + 1);
  t.equal(await state(), 'RUNNING', 'the first replica kept the session: it is in use through the second');
  t.ok(first.sessions.has(sessionId), 'and still holds it');

  // Idle everywhere: either replica stops it (one stop request; a second is harmless).
  await Promise.all([first.cull(Date.now() + 3 * idleMs), second.cull(Date.now() + 3 * idleMs)]);
  t.notOk(first.sessions.has(sessionId) || second.sessions.has(sessionId), 'idle on both: both let it go');
  t.not(await state(), 'RUNNING', 'and its application was stopped');
});

t.test('a session\'s labels are the endpoint\'s: a key cannot label its own application with another\'s session id', async (t) => {
  const { a, b, first, second, appsOf, api } = await setUp(t);
  const sessionId = 'b2c0ffee-0000-4000-8000-00000000000d';
  const started = await first.acquire({ id: a.id, key: a.key }, sessionId, undefined);
  first.release(started);
  const submission = (labels: Record<string, string>, driverLabels: Record<string, string> = {}) =>
    ({ jobName: 'squat', configOverrides: { type: 'Python', mainApplicationFile: 'local:///x.py', driver: { labels: driverLabels } }, labels });
  const post = (body: object, headers: Record<string, string> = {}) => api.call('POST', '/api/apps/', body, { 'x-api-key': b.key, ...headers });
  const asLabel = await post(submission({ [CONNECT_SESSION_LABEL]: sessionId }));
  t.equal(asLabel.status, 400, 'the session label in `labels`: 400');
  t.match(asLabel.json.message, /set by the Spark Connect endpoint only/);
  t.equal((await post(submission({}, { [CONNECT_SESSION_LABEL]: sessionId }))).status, 400, 'on the driver pod: 400');
  t.equal((await post(submission({ [CONNECT_ACTIVITY_LABEL]: String(Date.now()) }))).status, 400, 'the activity label too');
  t.equal((await appsOf(sessionId)).length, 1, 'nothing submitted');

  // Two replicas that started one id for two keys at once (each saw none): the key whose
  // application came first has it on every replica, whichever came last.
  const raced = await post(submission({ [CONNECT_SESSION_LABEL]: sessionId }), { [GATEWAY_PROOF_HEADER]: PROOF });
  t.equal(raced.status, 201, 'with the service\'s proof (the endpoint of another replica): accepted');
  const stolen = await refusal(second.acquire({ id: b.id, key: b.key }, sessionId, undefined));
  t.equal(stolen?.code, GrpcStatus.PERMISSION_DENIED, 'the later key is refused its own copy');
  const owner = await second.acquire({ id: a.id, key: a.key }, sessionId, undefined);
  second.release(owner);
  t.equal(owner.appName, started.appName, 'the owner reaches its own application there, not the newer one');
});

t.test('a replica killed without a drain leaves its session running; another replica\'s sweep stops it once idle past the timeout, and it stays ended', async (t) => {
  const { a, replica, api } = await setUp(t);
  const idleMs = 60_000;
  const sessionId = 'b2c0ffee-0000-4000-8000-00000000000e';
  const stops: string[] = [];
  // As both modes wire the sweep (cli/connect-wiring.ts): the cluster's own list, and the idle culling's stop without a key.
  const sweeping = (clock: FakeClock, swept = { count: 0 }): Partial<SessionsOptions> => ({
    clock,
    connectServers: async () => {
      const apps = await connectServers(api.cluster)();
      swept.count++;
      return apps;
    },
    stopApp: (appName, why) => { stops.push(appName); return api.cluster.stop(appName, why); },
  });
  const first = replica(idleMs, sweeping(new FakeClock(Date.now())), { drained: false });
  const started = await first.acquire({ id: a.id, key: a.key }, sessionId, undefined);
  first.release(started);
  const record = () => api.cluster.get(started.appName!);
  await until(async () => activityOf((await record())?.labels) !== undefined, { what: 'the session\'s activity label' });
  // The first replica is gone: its process state is discarded (no close, no stop; its clock never moves again).

  const clock = new FakeClock(Date.now());
  const swept = { count: 0 };
  const second = replica(idleMs, sweeping(clock, swept));
  /** Moves the second replica's clock and waits until a sweep has listed the applications since. */
  const sweepAfter = async (ms: number) => {
    const before = swept.count;
    clock.advance(ms);
    await until(() => swept.count > before, { what: 'a sweep' });
  };
  await until(() => swept.count > 0, { what: 'the second replica\'s sweep at its start' });
  await sweepAfter(idleMs);
  t.equal((await record())?.state, 'RUNNING', 'found by the second replica\'s sweeps, idle for the idle time only: kept');
  t.same(stops, [], 'nothing stopped');

  await sweepAfter(orphanAfter(idleMs) - idleMs + markEvery(idleMs));
  await until(async () => (await record())?.state === 'KILLED', { what: 'the orphan stopped' });
  t.same(stops, [started.appName], 'idle past the timeout and held by no live replica: the second replica stopped it, once');
  t.match((await record())?.stateDetail, /orphaned Spark Connect session: no live endpoint held it and it was idle for more than 60 s/, 'its record says why');
  t.notOk(second.sessions.has(sessionId), 'the second replica never took it over');

  await sweepAfter(markEvery(idleMs));
  await sweepAfter(markEvery(idleMs));
  t.same(stops, [started.appName], 'later sweeps leave the ended application alone');
  const late = await refusal(second.acquire({ id: a.id, key: a.key }, sessionId, undefined));
  t.equal(late?.code, GrpcStatus.FAILED_PRECONDITION, 'its client coming back through a replica is refused as ended, not started again');
  t.match(late?.message, /has ended \(its application .* is KILLED\)/);
});

t.test('a replica killed without a drain leaves its warm pool\'s server; another replica\'s sweep keeps it while that pool writes its activity, and stops it once it does not', async (t) => {
  const { replica, api } = await setUp(t);
  const idleMs = 60_000;
  const stops: Array<{ appName: string; why: string }> = [];
  const via = warmVia(api.cluster);
  // The pool's server, as the service submits it (no key), stays up like a Connect server (the test double's sleep).
  const warm = {
    ...via, sizes: new Map([[undefined, 1]]), warmUp: async () => undefined,
    submit: (submission: Parameters<typeof via.submit>[0]) => via.submit({ ...submission, configOverrides: { ...submission.configOverrides as object, arguments: ['sleep=600'] } }),
  };
  const firstClock = new FakeClock(Date.now());
  const first = replica(idleMs, { clock: firstClock, warm }, { drained: false });
  await until(() => first.pool?.status()[0]?.ready === 1, { what: 'the first replica\'s warm server ready' });
  const [appName] = first.pool!.appNames();
  const record = () => api.cluster.get(appName!);
  t.equal((await record())?.labels?.[CONNECT_SESSION_LABEL], WARM_SESSION);
  /** The first replica's cull tick (a quarter of the idle time): its pool's server's activity is written. */
  const firstTick = async () => {
    firstClock.advance(markEvery(idleMs));
    await until(async () => activityOf((await record())?.labels) === firstClock.now(), { what: 'the pool\'s activity written' });
  };
  await firstTick();

  // The replicas' clocks agree (the labels are times): the second's starts where the first's is now.
  const clock = new FakeClock(firstClock.now());
  const swept = { count: 0 };
  // The second replica: no pool, its orphan sweep on its own clock.
  replica(idleMs, {
    clock,
    connectServers: async () => { const apps = await connectServers(api.cluster)(); swept.count++; return apps; },
    stopApp: (name, why) => { stops.push({ appName: name, why }); return api.cluster.stop(name, why); },
  });
  const sweepAfter = async (ms: number) => {
    const before = swept.count;
    clock.advance(ms);
    await until(() => swept.count > before, { what: 'a sweep' });
  };
  await until(() => swept.count > 0, { what: 'the second replica\'s sweep at its start' });
  for (let i = 0; i < 8; i++) {
    await firstTick();
    await sweepAfter(markEvery(idleMs));
  }
  t.same(stops, [], 'two idle times later, its pool alive: kept by the other replica\'s sweeps');
  t.equal((await record())?.state, 'RUNNING');

  // The first replica is gone: its clock never moves again, so its pool writes nothing more.
  const lastWrite = activityOf((await record())?.labels)!;
  await sweepAfter(lastWrite + orphanAfter(idleMs) - markEvery(idleMs) - clock.now());
  t.same(stops, [], 'not yet idle long enough after its pool\'s last write');
  await sweepAfter(2 * markEvery(idleMs));
  await until(async () => (await record())?.state === 'KILLED', { what: 'the orphaned warm server stopped' });
  t.same(stops.map((s) => s.appName), [appName], 'stopped by the second replica, once');
  t.match((await record())?.stateDetail, /orphaned Spark Connect warm pool server: no live endpoint kept it/, 'its record says why');
  await sweepAfter(markEvery(idleMs));
  t.equal(stops.length, 1, 'later sweeps leave it alone');
});
