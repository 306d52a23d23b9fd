// After a restart of local mode: which Connect applications of the last run are stopped, which
// session ids are refused as ended and why (connect/last-run.ts); the local cluster stopping them
// at a start, running and queued, with that reason (cli/connect-local.ts); and the endpoint's
// sessions refusing those ids before anything is submitted (connect/sessions.ts's `ended`), as
// the real pyspark 3.5.7 and 4.2.0 clients see it (no Spark server needed: nothing is relayed).
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import type { FastifyBaseLogger } from 'fastify';
import type { AppRecord } from '../../cluster/cluster.js';
import { type ConnectAuth, createConnectEndpoint } from '../../connect/endpoint.js';
import { lastRunConnect, SERVICE_RESTARTED } from '../../connect/last-run.js';
import { GrpcRefusal, GrpcStatus } from '../../connect/grpc-status.js';
import { CONNECT_SERVER_CLASS, CONNECT_SESSION_LABEL } from '../../connect/server-app.js';
import type { ServiceApi } from '../../connect/service-api.js';
import { ConnectSessions } from '../../connect/sessions.js';
import { connectClientPython, runConnectClientOf } from './connect-client.js';
import { endLastRunConnect } from '../../cli/connect-local.js';
import { newAppName } from '../../cluster/app-name.js';
import { bareDriverPod } from '../../domain/index.js';
import { startTestApi } from '../helpers/api.js';
import { fakeJob } from '../helpers/fake-spark-submit.js';
import { waitForState } from '../helpers/poll.js';

const record = (appName: string, state: AppRecord['state'], labels: Record<string, string>, more: Partial<AppRecord> = {}): AppRecord => ({
  appName, jobName: 'connect', configTemplateName: '', config: { mainClass: CONNECT_SERVER_CLASS }, state, createdAt: '2026-11-28T10:00:00Z',
  startedAt: null, endedAt: null, runningExecutors: 0, namespace: 'default', labels, submittedBy: 'key-a', ...more,
});

t.test('the last run\'s Connect servers still queued or running are stopped; every session id it names is ended, with why', async (t) => {
  const records = [
    record('running', 'RUNNING', { [CONNECT_SESSION_LABEL]: 's1' }),
    record('queued1', 'PENDING', { [CONNECT_SESSION_LABEL]: 's2' }, { submittedBy: null }),
    record('warm-one', 'RUNNING', { [CONNECT_SESSION_LABEL]: 'warm' }),
    record('idle-ended', 'KILLED', { [CONNECT_SESSION_LABEL]: 's3' }, { stateDetail: 'the service stopped' }),
    record('batch', 'RUNNING', { [CONNECT_SESSION_LABEL]: 's4' }, { config: { mainClass: 'org.example.Job' } }),
    record('no-label', 'RUNNING', {}),
  ];
  const { toStop, ended } = lastRunConnect(records);
  t.same(toStop.sort(), ['queued1', 'running', 'warm-one'], 'running, queued and the warm pool\'s servers; not a batch job nor an unlabelled app');
  t.same(ended.sort((a, b) => a.sessionId.localeCompare(b.sessionId)), [
    { sessionId: 's1', owner: 'key-a', why: SERVICE_RESTARTED },
    { sessionId: 's2', owner: null, why: SERVICE_RESTARTED },
    { sessionId: 's3', owner: 'key-a', why: 'its application idle-ended is KILLED: the service stopped' },
  ], 'each session with its owner; a warm server names no session');
});

t.test('a session id with two applications is ended as its newest one says', async (t) => {
  const { ended } = lastRunConnect([
    record('newer-app', 'FAILED', { [CONNECT_SESSION_LABEL]: 's1' }, { createdAt: '2026-11-28T11:00:00Z' }),
    record('old', 'KILLED', { [CONNECT_SESSION_LABEL]: 's1' }, { createdAt: '2026-11-28T09:00:00Z' }),
  ]);
  t.same(ended, [{ sessionId: 's1', owner: 'key-a', why: 'its application newer-app is FAILED' }]);
});

const log = { info() {}, warn() {}, error() {} } as unknown as FastifyBaseLogger;

t.test('the endpoint refuses an ended session of the last run before submitting anything; its owner alone is told why', async (t) => {
  const calls: string[] = [];
  const api = new Proxy({}, { get: (_, name) => () => { calls.push(String(name)); throw new Error('no call expected'); } }) as unknown as ServiceApi;
  const sessions = new ConnectSessions({ api, log, defaultVersion: '3.5.7', serverJars: () => undefined, idleMs: 0, sessionClaims: async () => [], ended: [{ sessionId: 's1', owner: 'key-a', why: SERVICE_RESTARTED }] });
  t.teardown(() => sessions.close());
  const owner = await sessions.acquire({ id: 'key-a', key: 'k' }, 's1', undefined).catch((error: unknown) => error);
  t.ok(owner instanceof GrpcRefusal);
  t.equal((owner as GrpcRefusal).code, GrpcStatus.FAILED_PRECONDITION);
  t.match((owner as GrpcRefusal).message, /^Spark Connect session s1 has ended \(the service restarted.*build a new one/);
  t.equal((owner as GrpcRefusal).errorClass, 'INVALID_HANDLE.SESSION_CHANGED', 'Spark\'s class for a server instance that is gone');
  const other = await sessions.acquire({ id: 'key-b', key: 'k' }, 's1', undefined).catch((error: unknown) => error);
  t.equal((other as GrpcRefusal).code, GrpcStatus.PERMISSION_DENIED, 'another key learns nothing of it');
  t.same(calls, [], 'nothing was submitted or asked of the API');
});

t.test('the real clients, refused for a session of the last run: 4.x counts its session stopped (its next getOrCreate() starts anew)', { skip: !connectClientPython('4.2.0') || !connectClientPython() ? 'needs the Connect client virtualenvs' : false }, async (t) => {
  const api = {} as ServiceApi; // never called: the refusal comes first
  const sessionId = randomUUID();
  const sessions = new ConnectSessions({ api, log, defaultVersion: '3.5.7', serverJars: () => undefined, idleMs: 0, sessionClaims: async () => [], ended: [{ sessionId, owner: null, why: SERVICE_RESTARTED }] });
  const server = createConnectEndpoint({ auth: { enabled: false, store: {} as ConnectAuth['store'] }, sessions, log });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  t.teardown(async () => { server.close(); await sessions.close(); });
  const url = `sc://localhost:${(server.address() as AddressInfo).port}/;session_id=${sessionId}`;
  const four = await runConnectClientOf('4.2.0', 'refused', url);
  // pyspark 4.2 makes a call of its own first (its error is not shown): the one shown says the session is gone.
  t.match(four.errorClass, /^(INVALID_HANDLE\.SESSION_CHANGED|NO_ACTIVE_SESSION)$/, `pyspark 4.2 read the error class from the status details: ${four.message}`);
  t.equal(four.stopped, true, 'and counts its session stopped');
  t.equal(four.active, false, 'so no session is active: the next getOrCreate() builds a new one');
  const three = await runConnectClientOf('3.5.7', 'refused', url);
  t.equal(three.status, 'FAILED_PRECONDITION', three.message);
  t.match(three.message, /^\(INVALID_HANDLE\.SESSION_CHANGED\) Spark Connect session .* has ended \(the service restarted/, 'pyspark 3.5 shows the class and why');
});

t.test('at a start, local mode stops the last run\'s Connect servers, running and queued, with why', async (t) => {
  const api = await startTestApi(t, { cores: 2 });
  const { cluster } = api;
  const submit = async (sessionId: string) => {
    const appName = newAppName('connect');
    const configOverrides = { ...fakeJob({ sleep: 120 }), mainClass: CONNECT_SERVER_CLASS, executor: { cores: 2 } } as never;
    const created = await cluster.createDriver(bareDriverPod({ appName, jobName: 'connect', namespace: '', configOverrides, labels: { [CONNECT_SESSION_LABEL]: sessionId } }), { dryRun: false });
    t.ok(created.ok, 'submitted');
    return appName;
  };
  const running = await submit('s-running');
  await waitForState(() => api.getApp(running), 'RUNNING');
  const queued = await submit('s-queued'); // both cores are held: it waits
  const ended = await endLastRunConnect(cluster, log);
  t.same(ended.map((e) => e.sessionId).sort(), ['s-queued', 's-running'], 'both session ids are handed to the endpoint as ended');
  const [a, b] = [await cluster.get(running), await cluster.get(queued)];
  t.match(a, { state: 'KILLED', stateDetail: SERVICE_RESTARTED }, 'the running one is stopped, saying why');
  t.match(b, { state: 'KILLED', stateDetail: `stopped before it started: ${SERVICE_RESTARTED}` }, 'the queued one never starts');
});
