// Retries as new attempts in Kubernetes mode: the status controller (reconciler.ts with
// attempt-status.ts and attempt-starter.ts) against a fake cache and a fake apiserver, on a fake
// clock. A failed attempt becomes PENDING for the next one; its pod (named from the attempt) is
// created only after the interval and once the last attempt's executors are gone; an OOM-killed
// executor raises the executors' memory; an eviction does not count; the last attempt ends the
// application with every attempt listed; a refused retry ends it FAILED; Never is as before.
import t from 'tap';
import type { KubeConfig, V1Pod } from '@kubernetes/client-node';
import type { KubeClients } from '../../cluster/kubernetes/client.js';
import { KubeApiError } from '../../cluster/kubernetes/json-call.js';
import { Reconciler, type ReconcilerCache } from '../../cluster/kubernetes/reconciler.js';
import type { ApplicationResource, DriverView } from '../../cluster/kubernetes/records.js';
import { ANNOTATION_OVERRIDES, attemptPodName, buildRules, LABEL_APP, LABEL_ATTEMPT } from '../../domain/index.js';
import { exampleCluster } from '../helpers/api.js';
import { installFakeClock, type FakeClock } from './fixtures/fake-clock.js';

const CREATED = '2026-01-01T00:00:00.000Z';
const STARTED = '2026-01-01T00:00:05.000Z';
const ENDED = '2026-01-01T00:01:00.000Z';
const rules = buildRules({ nodePools: exampleCluster().nodePools, namespace: 'spark' });

function application(restartPolicy: object): ApplicationResource {
  const overrides = { executor: { cores: 1 } };
  return {
    apiVersion: 'submission-service.io/v1', kind: 'Application',
    metadata: { name: 'app-1', namespace: 'spark', uid: 'uid-app-1', creationTimestamp: CREATED, resourceVersion: '1', labels: { team: 'a' }, annotations: { [ANNOTATION_OVERRIDES]: JSON.stringify(overrides) } },
    spec: { jobName: 'job', configTemplateName: 'default', config: { type: 'Python', driver: { memory: '1g' }, executor: { memory: '2g', cores: 1 }, restartPolicy } as ApplicationResource['spec']['config'] },
    status: { state: 'RUNNING', startedAt: STARTED, endedAt: null, runningExecutors: 1, transitions: [{ state: 'PENDING', at: CREATED }, { state: 'RUNNING', at: STARTED }] },
  };
}

/** A driver pod of `attempt` as the kubelet leaves it: failed with `exitCode` (or running), `extra` status fields. */
function driverPod(attempt: number, exitCode?: number, extra: object = {}): V1Pod {
  const state = exitCode === undefined ? { running: { startedAt: new Date(STARTED) } } : { terminated: { exitCode, reason: 'Error', startedAt: new Date(STARTED), finishedAt: new Date(ENDED) } };
  return {
    metadata: { name: attemptPodName('app-1', attempt), uid: `pod-${attempt}`, labels: { [LABEL_APP]: 'app-1' } },
    status: { phase: exitCode === undefined ? 'Running' : 'Failed', containerStatuses: [{ name: 'spark-kubernetes-driver', image: 'x', imageID: '', ready: false, restartCount: 0, state }], ...extra },
  } as V1Pod;
}

const executor = (name: string, reason?: string): V1Pod => ({
  metadata: { name, uid: `uid-${name}`, labels: { [LABEL_APP]: 'app-1' } },
  status: { phase: reason ? 'Failed' : 'Running', containerStatuses: [{ name: 'e', image: 'x', imageID: '', ready: false, restartCount: 0, state: reason ? { terminated: { exitCode: 137, reason } } : { running: {} } }] },
}) as V1Pod;

/** The cache over one Application: the pod of the attempt its status names, and its executors. */
class FakeCache implements ReconcilerCache {
  pods = new Map<string, DriverView>();
  executors: V1Pod[] = [];
  forgotten = 0;
  constructor(public resource: ApplicationResource) {}
  names = () => [this.resource.metadata.name];
  application = (name: string) => (name === this.resource.metadata.name ? this.resource : undefined);
  driver = () => this.pods.get(attemptPodName('app-1', this.resource.status?.attempt ?? 1));
  runningExecutors = () => this.executors.filter((p) => p.status?.phase === 'Running').length;
  forgetDeletedDriver = () => undefined;
  executorsOf = () => this.executors;
  attemptExecutors = () => this.executors;
  forgetEndedExecutors = () => { this.forgotten += 1; };
}

interface Harness { clock: FakeClock; cache: FakeCache; reconciler: Reconciler; puts: ApplicationResource[]; deletes: string[]; created: V1Pod[]; refuse?: string; conflict?: boolean }

function setUp(t: { teardown(run: () => unknown): void }, restartPolicy: object): Harness {
  const clock = installFakeClock();
  const start = clock.now();
  const h: Harness = { clock, cache: new FakeCache(application(restartPolicy)), puts: [], deletes: [], created: [] } as unknown as Harness;
  const putJson = async <T>(_kc: KubeConfig, _path: string, body: unknown): Promise<T> => {
    const written = body as ApplicationResource;
    h.puts.push(written);
    // The informer brings the written object back, and its name with it.
    h.cache.resource = { ...written, metadata: { ...written.metadata, resourceVersion: String(h.puts.length + 1) } };
    queueMicrotask(() => h.reconciler.enqueue('app-1'));
    return written as T;
  };
  const deletePod = async <T>(_kc: KubeConfig, path: string): Promise<T> => { h.deletes.push(path); return {} as T; };
  h.reconciler = new Reconciler({
    clients: { kc: {} } as unknown as KubeClients, namespace: 'spark', cache: h.cache, workers: 1, rules,
    backoff: { baseMs: 1_000, jitter: 0 }, queue: { now: clock.now },
    calls: { putJson, patchJson: async <T>() => undefined as T, deletePod },
    wallClock: () => Date.parse(ENDED) + (clock.now() - start),
    createAttemptPod: async (bare) => {
      if (h.conflict) throw new KubeApiError(409, { message: 'pods "x" already exists' });
      h.created.push(bare);
      return h.refuse ? { refused: h.refuse } : undefined;
    },
  });
  t.teardown(() => { h.reconciler.deactivate(); clock.restore(); });
  return h;
}

async function pass(h: Harness, ms = 0): Promise<void> {
  if (ms > 0) await h.clock.advance(ms, 500);
  await h.clock.settle();
}

t.test('a user error with retries 1: attempt 2 after the interval and after the executors went, then FAILED with both attempts', async (t) => {
  const h = setUp(t, { type: 'OnFailure', retries: 1, retryIntervalSeconds: 30 });
  h.cache.pods.set('app-1', { pod: driverPod(1, 1), deleted: false });
  h.cache.executors = [executor('app-1-exec-1')];
  h.reconciler.activate();
  await pass(h);
  const pending = h.puts[0]!.status!;
  t.equal(pending.state, 'PENDING', 'not FAILED: attempt 2 follows');
  t.equal(pending.attempt, 2);
  t.match(pending.stateDetail, /attempt 1: exit code 1 \(Error\): attempt 2 \(retry 1 of 1\) starts after 30 s/);
  t.match(pending.attempts, [{ attempt: 1, driverPod: 'app-1', startedAt: STARTED, endedAt: ENDED, exitCode: 1, reason: 'Error', counted: true }, { attempt: 2, startedAt: null }]);
  t.same(pending.transitions!.map((x) => x.state), ['PENDING', 'RUNNING', 'PENDING']);
  t.equal(h.created.length, 0, 'no pod within the interval');
  t.same(h.deletes, [], 'nor is anything deleted yet');

  await pass(h, 30_000);
  t.same(h.deletes, ['/api/v1/namespaces/spark/pods/app-1-exec-1'], 'the last attempt\'s executor goes first');
  t.equal(h.created.length, 0, 'no pod while an executor of attempt 1 is there');
  h.cache.executors = [];
  await pass(h, 1_000);
  t.equal(h.created.length, 1, 'attempt 2\'s pod, once the executors are gone');
  const [pod] = h.created;
  t.equal(pod!.metadata!.name, 'app-1-attempt-2', 'named from the attempt');
  t.equal(pod!.metadata!.labels![LABEL_ATTEMPT], '2');
  t.match(pod!.metadata!.ownerReferences, [{ kind: 'Application', name: 'app-1', uid: 'uid-app-1', controller: true }]);
  t.same(JSON.parse(pod!.metadata!.annotations![ANNOTATION_OVERRIDES]!), { executor: { cores: 1 } }, 'the submission\'s overrides, nothing raised');
  t.equal(pod!.spec!.restartPolicy, 'Never');

  // Attempt 2 runs, then fails too: the last retry was used.
  h.cache.pods.set('app-1-attempt-2', { pod: driverPod(2), deleted: false });
  h.reconciler.enqueue('app-1');
  await pass(h);
  t.equal(h.cache.resource.status!.state, 'RUNNING');
  t.equal(h.cache.resource.status!.startedAt, STARTED, 'the application\'s start stays the first attempt\'s');
  h.cache.pods.set('app-1-attempt-2', { pod: driverPod(2, 3), deleted: false });
  h.reconciler.enqueue('app-1');
  await pass(h);
  const failed = h.cache.resource.status!;
  t.equal(failed.state, 'FAILED');
  t.match(failed.stateDetail, /exit code 3 \(Error\); attempt 2 was the last \(restartPolicy\.retries 1\)/);
  t.same(failed.attempts!.map((a) => [a.attempt, a.driverPod, a.exitCode, a.reason, a.counted]), [[1, 'app-1', 1, 'Error', true], [2, 'app-1-attempt-2', 3, 'Error', true]]);
  const created = h.created.length;
  await pass(h, 60_000);
  t.equal(h.created.length, created, 'no third attempt');
});

t.test('an executor OOM-killed: attempt 2 with twice the executor memory, the reason in stateDetail; a second leader meets a conflict', async (t) => {
  const h = setUp(t, { type: 'OnFailure', retries: 2, retryIntervalSeconds: 0 });
  h.cache.pods.set('app-1', { pod: driverPod(1, 1), deleted: false });
  h.cache.executors = [executor('app-1-exec-1', 'OOMKilled')];
  h.reconciler.activate();
  await pass(h);
  const pending = h.puts[0]!.status!;
  t.match(pending.stateDetail, /the executor ran out of memory .*executor app-1-exec-1 ran out of memory.*executor memory 4096m instead of 2048m/);
  t.match(pending.attempts, [{ attempt: 1, reason: 'OOMKilled (executor)', counted: true, memory: { executor: '2g' } }, { attempt: 2, memory: { executor: '4096m', driver: '1g' } }]);
  h.cache.executors = [];
  await pass(h, 1_000);
  t.equal(h.created.length, 1);
  t.same(JSON.parse(h.created[0]!.metadata!.annotations![ANNOTATION_OVERRIDES]!), { executor: { cores: 1, memory: '4096m' } }, 'the raise in the new pod\'s overrides');
  t.equal(h.cache.forgotten, 1, 'attempt 1\'s ended executors are forgotten');

  // Another replica made the pod first: the create meets 409, and nothing else happens.
  const writes = h.puts.length;
  h.conflict = true;
  h.reconciler.enqueue('app-1');
  await pass(h, 1_000);
  t.equal(h.puts.length, writes, 'no status write after a conflict');
  t.equal(h.created.length, 1, 'still one pod');
});

t.test('an evicted driver is retried at once without counting; a retry admission refuses ends FAILED', async (t) => {
  const h = setUp(t, { type: 'OnFailure', retries: 0, retryIntervalSeconds: 600 });
  h.cache.pods.set('app-1', { pod: driverPod(1, 143, { reason: 'Evicted', message: 'The node was low on resource: memory.' }), deleted: false });
  h.refuse = 'driver memory above the policy';
  h.reconciler.activate();
  await pass(h);
  const pending = h.puts[0]!.status!;
  t.equal(pending.state, 'PENDING', 'retried although retries is 0');
  t.match(pending.attempts![0], { reason: 'Evicted', counted: false });
  t.match(pending.stateDetail, /\(not counted\): attempt 2 starts/);
  await pass(h);
  t.equal(h.created.length, 1, 'no interval after an eviction');
  const failed = h.cache.resource.status!;
  t.equal(failed.state, 'FAILED');
  t.equal(failed.stateDetail, 'attempt 2 was refused by admission: driver memory above the policy');
  t.equal(failed.attempts!.length, 1, 'attempt 2 never ran');
});

t.test('Never (the default): FAILED as before, with its one attempt listed; a stop while attempt 2 waits creates nothing', async (t) => {
  const never = setUp(t, { type: 'Never' });
  never.cache.pods.set('app-1', { pod: driverPod(1, 1), deleted: false });
  never.reconciler.activate();
  await pass(never);
  const status = never.puts[0]!.status!;
  t.equal(status.state, 'FAILED');
  t.equal(status.stateDetail, 'exit code 1 (Error)', 'as before retries');
  t.match(status.attempts, [{ attempt: 1, exitCode: 1, reason: 'Error' }]);
  never.reconciler.deactivate();
  never.clock.restore();

  const waiting = setUp(t, { type: 'OnFailure', retries: 3, retryIntervalSeconds: 3600 });
  waiting.cache.pods.set('app-1', { pod: driverPod(1, 1), deleted: false });
  waiting.reconciler.activate();
  await pass(waiting);
  t.equal(waiting.cache.resource.status!.attempt, 2);
  waiting.cache.resource = { ...waiting.cache.resource, spec: { ...waiting.cache.resource.spec, stopRequested: true } };
  waiting.reconciler.enqueue('app-1');
  await pass(waiting, 3_600_000);
  t.equal(waiting.cache.resource.status!.state, 'KILLED');
  t.equal(waiting.cache.resource.status!.attempts!.length, 1, 'attempt 2 never ran');
  t.equal(waiting.created.length, 0, 'no pod after the stop');
});
