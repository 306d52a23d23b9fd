// The log-archive controller (cluster/kubernetes/log-archiver.ts) with a fake cache, a fake
// apiserver, a fake object store and a fake clock: an ended pod's log is kept and then its
// finalizer removed (once); a failed archive comes back after that pod's backoff; an archive
// that hangs is cancelled at its timeout (its log request aborted, so its upload ends); a pod
// deleting for longer than giveUpMs goes without its log; a replica that does not lead touches
// nothing.
import { PassThrough, type Readable } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import t from 'tap';
import type { V1Pod } from '@kubernetes/client-node';
import type { KubeClients } from '../../cluster/kubernetes/client.js';
import type { ObjectStore } from '../../cluster/history/object-store.js';
import { LABEL_APP, LOG_ARCHIVE_FINALIZER } from '../../domain/index.js';
import { LogArchive } from '../../cluster/kubernetes/log-archive.js';
import { LogArchiver } from '../../cluster/kubernetes/log-archiver.js';
import type { PodLogQuery } from '../../cluster/kubernetes/log-request.js';
import { expectAfter, type FakeClock, fakeClockAndQueue } from './fixtures/fake-clock.js';

const FINALIZER = LOG_ARCHIVE_FINALIZER;
const ended = { containerStatuses: [{ name: 'spark-kubernetes-driver', image: 'spark', imageID: '', ready: false, restartCount: 0, state: { terminated: { exitCode: 0 } } }], phase: 'Succeeded' } as V1Pod['status'];

function driverPod(extra: Partial<V1Pod['metadata']> = {}): V1Pod {
  return { metadata: { name: 'app-1', uid: 'uid-driver', finalizers: [FINALIZER], labels: { [LABEL_APP]: 'app-1' }, ...extra }, status: ended } as V1Pod;
}

/** Uploads read their body whole (as the store's would), or fail with what `failures` says. */
class FakeStore {
  readonly uploads: { key: string; text: string }[] = [];
  failures: Error[] = [];
  async upload(key: string, body: Readable): Promise<number> {
    const failure = this.failures.shift();
    if (failure) throw failure;
    let text = '';
    for await (const chunk of body) text += String(chunk);
    this.uploads.push({ key, text });
    return text.length;
  }

  async abortUnfinished() { /* none */ }
  async remove() { /* none */ }
}

interface Harness {
  clock: FakeClock; store: FakeStore; archiver: LogArchiver; said: string[]; patches: { name: string; body: unknown }[];
  opened: PodLogQuery[]; leading: boolean; pods: { driver?: V1Pod; earlier?: V1Pod; executors: V1Pod[] }; hang: boolean; wall: number;
}

function setUp(t: { teardown(run: () => unknown): void }): Harness {
  const { clock, queue } = fakeClockAndQueue(t, () => h.archiver.close());
  const h = { clock, store: new FakeStore(), said: [], patches: [], opened: [], leading: true, pods: { executors: [] }, hang: false, wall: Date.parse('2026-01-01T00:10:00Z') } as unknown as Harness;
  const core = {
    patchNamespacedPod: async ({ name, body }: { name: string; body: unknown }) => { h.patches.push({ name, body }); return {}; },
    listNamespacedPod: async () => ({ items: [] }),
    readNamespacedPod: async () => h.pods.driver,
  };
  const cache = {
    names: () => ['app-1'],
    application: (name: string) => (name === 'app-1' ? { metadata: { name }, status: h.pods.earlier ? { attempt: 2 } : undefined } : undefined),
    driver: () => (h.pods.driver ? { pod: h.pods.driver, deleted: false } : undefined),
    executorPods: () => h.pods.executors,
    driverPods: () => [h.pods.earlier, h.pods.driver].filter((p) => p !== undefined),
  };
  const openLog = async (_kc: unknown, query: PodLogQuery): Promise<IncomingMessage> => {
    h.opened.push(query);
    const body = new PassThrough();
    if (!h.hang) body.end(`log of ${query.pod}\n`);
    return body as unknown as IncomingMessage;
  };
  h.archiver = new LogArchiver({
    clients: { kc: {}, core } as unknown as KubeClients, namespace: 'spark', cache: cache as never,
    archive: new LogArchive(h.store as unknown as ObjectStore, 'logs'), isLeader: () => h.leading, log: (text) => h.said.push(text),
    giveUpMs: 120_000, archiveTimeoutMs: 60_000, resyncMs: 3_600_000, queue, wallClock: () => h.wall, openLog,
  });
  return h;
}

const removal = (index: number) => [
  { op: 'test', path: `/metadata/finalizers/${index}`, value: FINALIZER },
  { op: 'remove', path: `/metadata/finalizers/${index}` },
];

t.test('an ended driver pod: its log is kept, then its finalizer removed; a second pass uploads nothing again', async (t) => {
  const h = setUp(t);
  h.pods.driver = driverPod();
  h.archiver.controller.activate();
  await h.clock.settle();
  t.same(h.store.uploads, [{ key: 'logs/app-1/driver.log', text: 'log of app-1\n' }]);
  t.same(h.patches, [{ name: 'app-1', body: removal(0) }], 'the finalizer goes after the log is kept');
  // The finalizer removal failed to reach the cache before another event: no second upload.
  h.archiver.touch('app-1');
  await h.clock.settle();
  t.equal(h.store.uploads.length, 1, 'uploaded once');
  t.equal(h.patches.length, 2, 'the removal is simply tried again');
});

t.test('an ended executor pod is kept under its executor id', async (t) => {
  const h = setUp(t);
  h.pods.executors = [{ metadata: { name: 'app-1-exec-3', uid: 'uid-e3', finalizers: ['other', FINALIZER], labels: { [LABEL_APP]: 'app-1', 'spark-exec-id': '3' } }, spec: { containers: [{ name: 'spark-kubernetes-executor' }] }, status: ended } as V1Pod];
  h.archiver.controller.activate();
  await h.clock.settle();
  t.same(h.store.uploads, [{ key: 'logs/app-1/executor-3.log', text: 'log of app-1-exec-3\n' }]);
  t.equal(h.opened[0]!.container, 'spark-kubernetes-executor');
  t.same(h.patches, [{ name: 'app-1-exec-3', body: removal(1) }], 'our finalizer, at its index');
});

t.test('a failed archive comes back after that pod\'s backoff, doubling, and the pod is held meanwhile', async (t) => {
  const h = setUp(t);
  h.pods.driver = driverPod();
  h.store.failures = [new Error('store unavailable'), new Error('store unavailable')];
  h.archiver.controller.activate();
  await h.clock.settle();
  t.equal(h.opened.length, 1, 'first try');
  t.equal(h.patches.length, 0, 'held: no log kept yet');
  await expectAfter(t, h.clock, () => h.opened.length, [
    [900, 1, 'not before 1 s'],
    [200, 2, 'second try after 1 s'],
    [1_800, 2, 'not before 2 s more'],
    [300, 3, 'third try after 2 s'],
  ]);
  t.equal(h.store.uploads.length, 1, 'kept');
  t.equal(h.patches.length, 1, 'and let go');
  t.match(h.said.join('\n'), /log archive of driver\/app-1: store unavailable; retry 1 in 1000 ms/);
});

t.test('an archive that hangs is cancelled at its timeout: its log request is aborted, so its upload ends, and it is retried', async (t) => {
  const h = setUp(t);
  h.pods.driver = driverPod();
  h.hang = true;
  h.archiver.controller.activate();
  await h.clock.settle();
  const first = h.opened[0]!;
  t.notOk(first.signal?.aborted, 'the request runs');
  await h.clock.advance(59_000, 1_000);
  t.notOk(first.signal?.aborted, 'still within the timeout');
  await h.clock.advance(1_000);
  t.ok(first.signal?.aborted, 'aborted at the timeout');
  t.match(h.said.join('\n'), /no end after 60000 ms \(cancelled\); retry 1 in 1000 ms/);
  t.equal(h.store.uploads.length, 0, 'no half log kept');
  h.hang = false;
  await h.clock.advance(1_100);
  t.equal(h.store.uploads.length, 1, 'the retry keeps it');
  t.equal(h.patches.length, 1);
});

t.test('a pod deleting for longer than giveUpMs whose log cannot be kept goes without it, and the log says so', async (t) => {
  const h = setUp(t);
  h.pods.driver = driverPod({ deletionTimestamp: new Date(h.wall - 60_000) });
  h.store.failures = Array.from({ length: 10 }, () => new Error('store unavailable'));
  h.archiver.controller.activate();
  await h.clock.settle();
  t.equal(h.patches.length, 0, 'held while within giveUpMs');
  h.wall += 61_000;
  await h.clock.advance(1_100);
  t.same(h.patches, [{ name: 'app-1', body: removal(0) }], 'let go past giveUpMs');
  t.match(h.said.join('\n'), /giving up after store unavailable; the pod goes without its log archived/);
});

t.test('a replica that does not lead keeps no log and removes no finalizer', async (t) => {
  const h = setUp(t);
  h.leading = false;
  h.pods.driver = driverPod();
  h.archiver.controller.activate();
  await h.clock.settle();
  t.equal(h.opened.length, 0, 'no log read');
  t.equal(h.patches.length, 0, 'no finalizer removed');
  h.leading = true;
  h.archiver.controller.deactivate();
  h.archiver.touch('app-1');
  await h.clock.advance(5_000, 1_000);
  t.equal(h.opened.length + h.patches.length, 0, 'nor after its term ended');
});

t.test('a running pod and a pod without our finalizer are not archived', async (t) => {
  const h = setUp(t);
  h.pods.driver = { ...driverPod(), status: { phase: 'Running' } } as V1Pod;
  h.pods.executors = [{ metadata: { name: 'app-1-exec-1', uid: 'uid-e1', finalizers: [], labels: { [LABEL_APP]: 'app-1', 'spark-exec-id': '1' } }, status: ended } as V1Pod];
  h.archiver.controller.activate();
  await h.clock.settle();
  t.equal(h.opened.length, 0, 'nothing read');
  t.equal(h.patches.length, 0, 'nothing released');
});

t.test('a retry: the driver pod of the attempt before, ended and holding the finalizer, is kept and let go though the application moved on', async (t) => {
  const h = setUp(t);
  h.pods.earlier = driverPod({ uid: 'uid-attempt-1' });
  h.pods.driver = { ...driverPod({ name: 'app-1-attempt-2', uid: 'uid-attempt-2' }), status: { phase: 'Running' } } as V1Pod;
  h.archiver.controller.activate();
  await h.clock.settle();
  t.same(h.store.uploads, [{ key: 'logs/app-1/driver.log', text: 'log of app-1\n' }], 'attempt 1\'s log');
  t.same(h.patches, [{ name: 'app-1', body: removal(0) }], 'and its finalizer removed: the pod can go with its Application');
});
