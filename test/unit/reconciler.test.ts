// The Reconciler (cluster/kubernetes/reconciler.ts) against a fake cache and a fake apiserver
// write, on a fake clock: a state change is written once and not again, a failed write comes
// back after its backoff (and only then), a conflict waits for the informer instead of
// retrying, and a replica that no longer leads writes nothing.
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
}

/** The status PUT: answers in turn from `failures`, then writes. */
class FakeWrites {
  readonly puts: { path: string; body: ApplicationResource; at: number }[] = [];
  failures: Error[] = [];
  constructor(private readonly clock: FakeClock) {}
  readonly putJson = async <T>(_kc: KubeConfig, path: string, body: unknown): Promise<T> => {
    this.puts.push({ path, body: body as ApplicationResource, at: this.clock.now() });
    const failure = this.failures.shift();
    if (failure) throw failure;
    return { ...(body as object), metadata: { ...(body as ApplicationResource).metadata, resourceVersion: String(this.puts.length + 1) } } as T;
  };

  readonly patchJson = async <T>(): Promise<T> => { throw new Error('no config patch expected: the config is there'); };
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
    calls: { putJson: writes.putJson, patchJson: writes.patchJson },
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
