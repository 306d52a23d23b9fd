// The Reconciler (cluster/kubernetes/reconciler.ts) against a fake cache and a fake apiserver
// write, on a fake clock: a state change is written once and not again, a failed write comes
// back after its backoff (and only then), a conflict waits for the informer instead of
// retrying, a replica that no longer leads writes nothing, a user's stop request becomes
// KILLED and then the pod's deletion, the config is corrected once at most, and an
// Application without its pod comes back when its grace period ends (requeue after, no sleep).
import t from 'tap';
import type { KubeConfig, V1Pod } from '@kubernetes/client-node';
import type { AppCache } from '../../cluster/kubernetes/app-cache.js';
import type { KubeClients } from '../../cluster/kubernetes/client.js';
import { KubeApiError } from '../../cluster/kubernetes/json-call.js';
import { Reconciler } from '../../cluster/kubernetes/reconciler.js';
import type { ApplicationResource, DriverView } from '../../cluster/kubernetes/records.js';
import { installFakeClock, type FakeClock } from './fixtures/fake-clock.js';

const CREATED = '2026-01-01T00:00:00.000Z';
const STARTED = '2026-01-01T00:00:05.000Z';

/** An Application the API wrote, PENDING, with its config copied; its driver pod now runs. */
function pendingApplication(): ApplicationResource {
  return {
    apiVersion: 'spark.example/v1', kind: 'Application',
    metadata: { name: 'app-1', namespace: 'spark', creationTimestamp: CREATED, resourceVersion: '1' },
    spec: { jobName: 'job', configTemplateName: 'default', config: { type: 'Python' } as ApplicationResource['spec']['config'] },
    status: { state: 'PENDING', startedAt: null, endedAt: null, runningExecutors: 0, transitions: [{ state: 'PENDING', at: CREATED }] } as ApplicationResource['status'],
  };
}

const runningDriver: DriverView = { deleted: false, pod: { metadata: { name: 'app-1-driver' }, status: { phase: 'Running', startTime: new Date(STARTED) } } as V1Pod };

/** The AppCache calls the Reconciler makes, over one Application. */
class FakeCache {
  constructor(public resource: ApplicationResource, public driverView?: DriverView) {}
  names() { return [this.resource.metadata.name]; }
  application(name: string) { return name === this.resource.metadata.name ? this.resource : undefined; }
  driver() { return this.driverView; }
  runningExecutors() { return 2; }
  forgetDeletedDriver() { /* nothing kept */ }
  executorsOf() { return []; }
  attemptExecutors() { return []; }
  forgetEndedExecutors() { /* nothing kept */ }
}

/** The status PUT: answers in turn from `failures`, then writes. */
class FakeWrites {
  readonly puts: { path: string; body: ApplicationResource; at: number }[] = [];
  readonly patches: { path: string; operations: unknown[] }[] = [];
  readonly deletes: { path: string; options: unknown }[] = [];
  failures: Error[] = [];
  constructor(private readonly clock: FakeClock) {}
  readonly putJson = async <T>(_kc: KubeConfig, path: string, body: unknown): Promise<T> => {
    this.puts.push({ path, body: body as ApplicationResource, at: this.clock.now() });
    const failure = this.failures.shift();
    if (failure) throw failure;
    return { ...(body as object), metadata: { ...(body as ApplicationResource).metadata, resourceVersion: String(this.puts.length + 1) } } as T;
  };

  readonly patchJson = async <T>(_kc: KubeConfig, path: string, operations: unknown[]): Promise<T> => {
    this.patches.push({ path, operations });
    return undefined as T;
  };

  readonly deletePod = async <T>(_kc: KubeConfig, path: string, options: unknown): Promise<T> => {
    this.deletes.push({ path, options });
    return {} as T;
  };
}

interface Harness { clock: FakeClock; cache: FakeCache; writes: FakeWrites; reconciler: Reconciler; said: string[]; leading: boolean }

/** What setUp needs of a tap test. */
interface TestLike { teardown(run: () => unknown): void }

function setUp(t: TestLike): Harness {
  const clock = installFakeClock();
  const cache = new FakeCache(pendingApplication(), runningDriver);
  const writes = new FakeWrites(clock);
  const h = { clock, cache, writes, said: [] as string[], leading: true } as Harness;
  h.reconciler = new Reconciler({
    clients: { kc: {} } as unknown as KubeClients, namespace: 'spark', cache: cache as unknown as AppCache, workers: 2,
    backoff: { baseMs: 1_000, maxMs: 60_000, jitter: 0 }, log: (text) => h.said.push(text), mayWrite: () => h.leading,
    calls: { putJson: writes.putJson, patchJson: writes.patchJson, deletePod: writes.deletePod }, queue: { now: clock.now },
  });
  t.teardown(() => { h.reconciler.deactivate(); clock.restore(); });
  return h;
}

t.test('a state change is written once, and a second pass over the written state writes nothing', async (t) => {
  const h = setUp(t);
  h.reconciler.activate();
  await h.clock.settle();
  await h.reconciler.drained();
  t.equal(h.writes.puts.length, 1, 'one write');
  const [put] = h.writes.puts;
  t.match(put!.path, /\/namespaces\/spark\/.*\/app-1\/status\?fieldManager=/, 'to the Application\'s status');
  t.equal(put!.body.status?.state, 'RUNNING');
  t.equal(put!.body.status?.runningExecutors, 2);
  t.same(put!.body.status?.transitions?.map((x) => x.state), ['PENDING', 'RUNNING'], 'the transition is recorded');
  t.equal(put!.body.metadata.resourceVersion, '1', 'conditional on the version read');
  // The informer brings the written object back; events for it queue the name again.
  h.cache.resource = { ...put!.body, metadata: { ...put!.body.metadata, resourceVersion: '2' } };
  h.reconciler.enqueue('app-1');
  h.reconciler.enqueue('app-1');
  await h.clock.settle();
  await h.reconciler.drained();
  t.equal(h.writes.puts.length, 1, 'nothing more to write');
});

t.test('a failed write comes back after its backoff, doubling, until it is written', async (t) => {
  const h = setUp(t);
  h.writes.failures = [new KubeApiError(500, { message: 'etcdserver: leader changed' }), new KubeApiError(503, { message: 'unavailable' })];
  h.reconciler.activate();
  await h.clock.settle();
  t.equal(h.writes.puts.length, 1, 'the first try failed');
  await h.clock.advance(900);
  t.equal(h.writes.puts.length, 1, 'no retry before the 1 s backoff');
  await h.clock.advance(200);
  t.equal(h.writes.puts.length, 2, 'retried after 1 s; failed again');
  await h.clock.advance(1_800);
  t.equal(h.writes.puts.length, 2, 'no retry before the doubled 2 s backoff');
  await h.clock.advance(300);
  t.equal(h.writes.puts.length, 3, 'retried after 2 s; written');
  const gaps = h.writes.puts.slice(1).map((put, i) => put.at - h.writes.puts[i]!.at);
  t.ok(gaps[0]! >= 1_000 && gaps[0]! <= 1_100 && gaps[1]! >= 2_000 && gaps[1]! <= 2_100, `backoff gaps ${gaps.join(', ')} ms`);
  t.equal(h.writes.puts[2]!.body.status?.state, 'RUNNING');
  await h.reconciler.drained();
  t.equal(h.reconciler.queue?.retries('app-1'), 0, 'the backoff is reset after the success');
  t.match(h.said.join('\n'), /reconcile app-1: HTTP 500: etcdserver: leader changed; retry 1 in 1000 ms/);
  await h.clock.advance(30_000, 1_000);
  t.equal(h.writes.puts.length, 3, 'and nothing is written again');
});

t.test('a conflict is not retried on a timer: the informer\'s newer object brings the name back', async (t) => {
  const h = setUp(t);
  h.writes.failures = [new KubeApiError(409, { message: 'the object has been modified' })];
  h.reconciler.activate();
  await h.clock.settle();
  await h.reconciler.drained();
  t.equal(h.writes.puts.length, 1, 'one write, refused');
  t.equal(h.reconciler.queue?.retries('app-1'), 0, 'no backoff for a conflict');
  await h.clock.advance(120_000, 1_000);
  t.equal(h.writes.puts.length, 1, 'no retry on a timer');
  // Someone else's write: the informer brings the newer version, and its event the name.
  h.cache.resource = { ...h.cache.resource, metadata: { ...h.cache.resource.metadata, resourceVersion: '7' } };
  h.reconciler.enqueue('app-1');
  await h.clock.settle();
  await h.reconciler.drained();
  t.equal(h.writes.puts.length, 2, 'written again from the newer object');
  t.equal(h.writes.puts[1]!.body.metadata.resourceVersion, '7', 'conditional on the newer version');
});

t.test('a replica that no longer leads writes nothing', async (t) => {
  const h = setUp(t);
  h.leading = false;
  h.reconciler.activate();
  await h.clock.settle();
  await h.reconciler.drained();
  t.equal(h.writes.puts.length, 0, 'no write while not leading');
  h.reconciler.deactivate();
  h.reconciler.enqueue('app-1');
  h.leading = true;
  await h.clock.advance(10_000, 1_000);
  t.equal(h.writes.puts.length, 0, 'nor after the term ended');
});

/** The cache after the apiserver stored `put` (the informer brings it back). */
function stored(h: Harness, put: { body: ApplicationResource }): void {
  h.cache.resource = { ...put.body, metadata: { ...put.body.metadata, resourceVersion: String(Number(put.body.metadata.resourceVersion) + 1) } };
}

t.test('a stop request in the spec: KILLED is written, then the driver pod (that very uid) is deleted, once', async (t) => {
  const h = setUp(t);
  h.cache.resource.spec.stopRequested = true;
  h.cache.driverView = { deleted: false, pod: { ...runningDriver.pod, metadata: { name: 'app-1', uid: 'pod-uid-1' } } };
  h.reconciler.activate();
  await h.clock.settle();
  await h.reconciler.drained();
  t.equal(h.writes.puts.length, 1, 'one status write');
  t.equal(h.writes.puts[0]!.body.status?.state, 'KILLED');
  t.equal(h.writes.puts[0]!.body.status?.stateDetail, 'stopped by a user');
  t.same(h.writes.deletes, [{ path: '/api/v1/namespaces/spark/pods/app-1', options: { preconditions: { uid: 'pod-uid-1' } } }], 'the pod goes after KILLED is stored');
  // The stored KILLED comes back, then the pod's deletion: nothing more to do.
  stored(h, h.writes.puts[0]!);
  h.reconciler.enqueue('app-1');
  await h.clock.settle();
  h.cache.driverView = { deleted: true, pod: h.cache.driverView.pod };
  h.reconciler.enqueue('app-1');
  await h.clock.settle();
  await h.reconciler.drained();
  t.equal(h.writes.puts.length, 1, 'no second status write');
  t.equal(h.writes.deletes.length, 1, 'no second delete');
});

t.test('a stop request with the service\'s reason: KILLED with that reason as stateDetail (and as the attempt\'s end)', async (t) => {
  const h = setUp(t);
  h.cache.resource.spec.stopRequested = true;
  h.cache.resource.spec.stopReason = 'idle for more than 600 s';
  h.reconciler.activate();
  await h.clock.settle();
  await h.reconciler.drained();
  const status = h.writes.puts[0]?.body.status;
  t.match(status, { state: 'KILLED', stateDetail: 'idle for more than 600 s' });
  t.equal(status?.transitions?.at(-1)?.detail, 'idle for more than 600 s', 'the transition says why');
  t.match(status?.attempts?.at(-1), { reason: 'Stopped', detail: 'idle for more than 600 s' }, 'the attempt\'s end says why');
  t.equal(h.writes.deletes.length, 1, 'the pod goes as after a user\'s stop');
});

t.test('a stop request that meets a pod which ended by itself records that end, and deletes nothing', async (t) => {
  const h = setUp(t);
  h.cache.resource.spec.stopRequested = true;
  h.cache.driverView = { deleted: false, pod: { metadata: { name: 'app-1' }, status: { phase: 'Succeeded', startTime: new Date(STARTED) } } as V1Pod };
  h.reconciler.activate();
  await h.clock.settle();
  await h.reconciler.drained();
  t.equal(h.writes.puts[0]?.body.status?.state, 'COMPLETED');
  t.equal(h.writes.deletes.length, 0);
});

t.test('a stop request is not carried out by a replica that does not lead', async (t) => {
  const h = setUp(t);
  h.leading = false;
  h.cache.resource.spec.stopRequested = true;
  h.reconciler.activate();
  await h.clock.settle();
  await h.reconciler.drained();
  t.equal(h.writes.puts.length + h.writes.deletes.length, 0, 'neither status nor pod is touched');
});

t.test('the config: copied when missing, corrected once when the webhook admitted another, never in a loop', async (t) => {
  const h = setUp(t);
  const admitted = { type: 'Python', driver: { cores: 2 } };
  h.cache.driverView = { deleted: false, pod: { ...runningDriver.pod, metadata: { name: 'app-1', annotations: { 'submission-service/config': JSON.stringify(admitted) } } } };
  h.cache.resource.metadata.uid = 'app-uid-1';
  h.reconciler.activate();
  await h.clock.settle();
  await h.reconciler.drained();
  t.equal(h.writes.patches.length, 1, 'the Application\'s other config is corrected');
  t.match(h.writes.patches[0]!.operations, [{ op: 'test', path: '/metadata/uid', value: 'app-uid-1' }, { op: 'add', path: '/spec/config', value: admitted }]);
  t.match(h.said.join('\n'), /admitted another config than the API expected/);
  // Say the apiserver pruned something: the stored config still differs. No second write.
  h.reconciler.enqueue('app-1');
  await h.clock.settle();
  await h.reconciler.drained();
  t.equal(h.writes.patches.length, 1, 'corrected once, not in a loop');
});

t.test('the config: an Application with the admitted config is not written again', async (t) => {
  const h = setUp(t);
  const admitted = { type: 'Python', driver: { cores: 2 } };
  h.cache.resource.spec.config = admitted as ApplicationResource['spec']['config'];
  h.cache.driverView = { deleted: false, pod: { ...runningDriver.pod, metadata: { name: 'app-1', annotations: { 'submission-service/config': JSON.stringify({ driver: { cores: 2 }, type: 'Python' }) } } } };
  h.reconciler.activate();
  await h.clock.settle();
  await h.reconciler.drained();
  t.equal(h.writes.patches.length, 0, 'the same config (in another key order) is no difference');
  t.equal(h.writes.puts.length, 1, 'the status is written as usual');
});

t.test('an Application without its pod comes back when its grace period ends, and only then is UNKNOWN', async (t) => {
  const h = setUp(t);
  h.cache.driverView = undefined;
  h.cache.resource.status = undefined;
  h.cache.resource.metadata.creationTimestamp = new Date().toISOString();
  h.reconciler.activate();
  await h.clock.settle();
  t.equal(h.writes.puts.length, 0, 'nothing to write within the grace period');
  t.ok(h.reconciler.queue?.busy, 'the name waits out the grace period in the queue (no sleep)');
  // Date is not faked: the grace period is judged from creation; move creation back instead.
  h.cache.resource.metadata.creationTimestamp = new Date(Date.now() - 60_000).toISOString();
  await h.clock.advance(31_000, 1_000);
  await h.reconciler.drained();
  t.equal(h.writes.puts.length, 1);
  t.equal(h.writes.puts[0]!.body.status?.state, 'UNKNOWN');
  t.equal(h.writes.puts[0]!.body.status?.stateDetail, 'the driver pod is gone', 'its config was copied, so a pod was admitted once');
});
