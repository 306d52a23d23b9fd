// How the endpoint's sessions take a server from the warm pool (connect/warm-handout.ts),
// over a fake API and a fake cluster, the "servers" one real loopback listener: a dry run and the
// claim as the caller's key come first; a refusal before the claim was recorded puts the server
// back and reaches the client; a claim in doubt stops the server and the session starts cold.
// Throughout, the server is this endpoint's (holds: the orphan sweep leaves it): the pool's, then
// the hand-out's, then the session's.
import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { GrpcRefusal, GrpcStatus } from '../../connect/grpc-status.js';
import type { ServiceApi } from '../../connect/service-api.js';
import { ConnectSessions } from '../../connect/sessions.js';
import { silentLog } from '../gateway/scripted-kernel.js';
import { until } from '../helpers/poll.js';

interface Call { what: string; appName?: string; key?: string; dryRun?: boolean }

async function setUp(t: Test, claim: (appName: string) => Promise<void>, label: () => Promise<void> = async () => undefined) {
  const listener: Server = createServer((socket) => socket.destroy());
  await new Promise<void>((ok) => listener.listen(0, '127.0.0.1', ok));
  t.teardown(() => { listener.close(); });
  const port = (listener.address() as AddressInfo).port;
  const calls: Call[] = [];
  let next = 0;
  const api = {
    template: async () => ({ name: 'small', config: {} }),
    submit: async (_body: unknown, key?: string, options: { dryRun?: boolean } = {}) => {
      calls.push({ what: 'submit', key, dryRun: options.dryRun === true });
      return { appName: options.dryRun ? 'dry' : `cold-${++next}`, state: 'PENDING' };
    },
    claim: async (appName: string, key?: string) => { calls.push({ what: 'claim', appName, key }); await claim(appName); },
    get: async (appName: string) => ({ appName, state: 'RUNNING' }),
    stop: async () => undefined,
  } as unknown as ServiceApi;
  const stopped: string[] = [];
  const labelled: Array<[string, string]> = [];
  const sessions = new ConnectSessions({
    api, log: silentLog, defaultVersion: '3.5.7', serverJars: () => undefined, idleMs: 0, sessionClaims: async () => [],
    placement: { port: async () => port, address: async () => ({ host: '127.0.0.1', port }), token: () => undefined },
    stopApp: async (appName) => { stopped.push(appName); },
    warm: {
      sizes: new Map([[undefined, 1]]),
      submit: async () => ({ appName: `warm-${++next}`, state: 'RUNNING' }),
      get: async (appName) => ({ appName, state: 'RUNNING' }),
      templateVersion: async () => null,
      handedOut: async (appName, sessionId) => { labelled.push([appName, sessionId]); await label(); },
      checkMs: 3_600_000,
      warmUp: async () => undefined, // its "server" is a bare listener, not Spark's: nothing to warm up
    },
  });
  t.teardown(() => sessions.close());
  const readyWarm = () => until(() => sessions.pool?.status()[0]?.ready === 1, { what: 'a ready warm server' });
  await readyWarm();
  return { sessions, calls, stopped, readyWarm, labelled };
}

const caller = { id: 'key-a', key: 'ssk_a' };

t.test('a new session gets the ready server after a dry run and the claim as the caller\'s key', async (t) => {
  const { sessions, calls, stopped, labelled } = await setUp(t, async () => undefined);
  const session = await sessions.acquire(caller, 'session-1', undefined);
  t.equal(session.appName, 'warm-1', 'the pool\'s server');
  t.same(labelled, [['warm-1', 'session-1']], 'its record is labelled with the session it now runs');
  t.ok(session.warm);
  t.same(calls, [{ what: 'submit', key: 'ssk_a', dryRun: true }, { what: 'claim', appName: 'warm-1', key: 'ssk_a' }], 'checked, then claimed, as the caller');
  t.same(stopped, []);
  t.not(sessions.pool?.status()[0]?.ready, 1, 'it left the pool');
});

t.test('the record\'s label is not waited for: a slow write does not hold the session\'s first call', async (t) => {
  let written!: () => void;
  const { sessions, labelled } = await setUp(t, async () => undefined, () => new Promise<void>((ok) => { written = ok; }));
  const session = await sessions.acquire(caller, 'session-1', undefined);
  t.equal(session.appName, 'warm-1', 'the session has its server while the label is still being written');
  t.same(labelled, [['warm-1', 'session-1']], 'the label was asked for');
  written();
});

t.test('a claim refused at the key\'s cap reaches the client, and the server goes back to the pool', async (t) => {
  const { sessions, stopped } = await setUp(t, async () => {
    throw new GrpcRefusal(GrpcStatus.RESOURCE_EXHAUSTED, 'the service refused the session\'s application (HTTP 429): this key has 50 unfinished applications');
  });
  await t.rejects(sessions.acquire(caller, 'session-1', undefined), { code: GrpcStatus.RESOURCE_EXHAUSTED }, 'as a cold start at the cap would be');
  t.equal(sessions.pool?.status()[0]?.ready, 1, 'the server is the pool\'s again');
  t.same(stopped, [], 'and not stopped');
  t.notOk(sessions.sessions.has('session-1'), 'no session kept');
});

t.test('a claim in doubt (no answer) stops the server, never handing it out again, and the session starts cold', async (t) => {
  const { sessions, calls, stopped } = await setUp(t, async () => { throw new Error('socket hang up'); });
  const session = await sessions.acquire(caller, 'session-1', undefined);
  t.same(stopped, ['warm-1'], 'the server in doubt is stopped');
  t.match(session.appName, /^cold-/, 'the session got its own application');
  t.notOk(session.warm);
  t.ok(calls.some((c) => c.what === 'submit' && !c.dryRun && c.key === 'ssk_a'), 'submitted as the caller');
});

t.test('the server is this endpoint\'s throughout (the orphan sweep leaves it): the pool\'s, while it is handed out, then the session\'s', async (t) => {
  const held: boolean[] = [];
  let sessions: ConnectSessions | undefined;
  const set = await setUp(t, async (appName) => { held.push(sessions!.holds(appName)); });
  sessions = set.sessions;
  t.ok(sessions.holds('warm-1'), 'the pool\'s ready server');
  const session = await sessions.acquire(caller, 'session-1', undefined);
  t.same(held, [true], 'during its claim, out of the pool and not yet the session\'s');
  t.equal(session.appName, 'warm-1');
  t.ok(sessions.holds('warm-1'), 'then the session\'s');
  t.notOk(sessions.holds('someone-elses'), 'nothing else');
});
