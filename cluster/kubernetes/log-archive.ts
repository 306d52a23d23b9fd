// Logs kept after the pods go (Kubernetes mode). Admission puts LOG_ARCHIVE_FINALIZER on every
// driver and executor pod; when one has ended (or is being deleted), the controller — the one
// writer, under the Lease — streams its log into the object store, then removes the
// finalizer, and only then can the pod go. A pod being deleted whose log cannot be read is let
// go after a bounded wait (giveUpMs), so a stuck archive never pins pods. Reads of an
// application's log fall back to the archive once its pod is gone.
//
// While a pod runs, its log is followed and sent part by part (log-follower.ts), so that at
// its end only the last part is left; pods beyond the follow limit, pods that ended before
// they were followed and follows that cannot vouch for the whole log are read whole at the end.
//
// Memory: a log is streamed from the apiserver into a multipart upload one part at a time
// (object-store.ts), so a 100 MB log costs one part of buffer, not 100 MB; a followed log
// spools on local disk (one part at most per pod).
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline, type Readable, Transform } from 'node:stream';
import type { V1Pod } from '@kubernetes/client-node';
import { DRIVER_CONTAINER, LABEL_APP, LOG_ARCHIVE_FINALIZER, SPARK_ROLE } from '../../domain/index.js';
import type { ObjectStore } from '../history/object-store.js';
import type { AppCache } from './app-cache.js';
import type { KubeClients } from './client.js';
import type { Log as LogFn } from './informers.js';
import { removeFollowState } from './follow-state.js';
import { capMarker, LogFollower, PartBuffers } from './log-follower.js';
import { openPodLog } from './log-request.js';

/** Which pod's log: the driver's, or executor N's (`executor-N`, Spark's executor id). */
export type LogContainer = 'driver' | `executor-${number}`;

export const isLogContainer = (value: string): value is LogContainer => value === 'driver' || /^executor-[1-9][0-9]{0,5}$/.test(value);

/** Where archived logs are: `<prefix>/<appName>/<driver|executor-N>.log` in one bucket. */
export class LogArchive {
  constructor(readonly store: ObjectStore, private readonly prefix: string) {}

  key(appName: string, container: LogContainer): string {
    return `${this.folder(appName)}${container}.log`;
  }

  /** An application's folder, with its slash (app-1/ must not take app-10/). */
  private folder(appName: string): string {
    return `${this.prefix ? `${this.prefix}/` : ''}${appName}/`;
  }

  read(appName: string, container: LogContainer, offset = 0): Promise<Readable | undefined> {
    return this.store.read(this.key(appName, container), offset);
  }

  save(appName: string, container: LogContainer, body: Readable): Promise<number> {
    return this.store.upload(this.key(appName, container), body);
  }

  /** The containers archived for an application (driver first). */
  async containers(appName: string): Promise<LogContainer[]> {
    const base = this.folder(appName);
    const found: LogContainer[] = [];
    for await (const item of this.store.list(base)) {
      const name = 'key' in item ? item.key.slice(base.length).replace(/\.log$/, '') : '';
      if (isLogContainer(name)) found.push(name);
    }
    return found.sort((a, b) => (a === 'driver' ? -1 : b === 'driver' ? 1 : Number(a.slice(9)) - Number(b.slice(9))));
  }

  async remove(appName: string): Promise<void> {
    await this.store.removePrefix(this.folder(appName));
  }
}

export interface LogArchiverOptions {
  clients: KubeClients;
  namespace: string;
  cache: AppCache;
  archive: LogArchive;
  /** Only the leader archives and removes finalizers. */
  isLeader: () => boolean;
  log: LogFn;
  /** A pod being deleted that could not be archived is let go after this long (default 2 min): never held for ever. */
  giveUpMs?: number;
  /** At most this many running pods are followed at once (default 32); the others are read whole at their end. */
  followLimit?: number;
  /** Each archived log keeps at most this many bytes (default 1 GiB), then a line that says it was cut. */
  maxLogBytes?: number;
  /** Where followed logs spool (default the temporary directory): at most followLimit × 5 MiB. */
  spoolDir?: string;
}

export const DEFAULT_FOLLOW_LIMIT = 32;
export const DEFAULT_MAX_LOG_BYTES = 1024 ** 3;

const hasFinalizer = (pod: V1Pod) => pod.metadata?.finalizers?.includes(LOG_ARCHIVE_FINALIZER) ?? false;

/** The driver has ended (its phase says so, or it is being deleted and no container runs). */
function ended(pod: V1Pod): boolean {
  const phase = pod.status?.phase;
  if (phase === 'Succeeded' || phase === 'Failed') return true;
  if (!pod.metadata?.deletionTimestamp) return false;
  return !(pod.status?.containerStatuses ?? []).some((c) => c.state?.running);
}

/** Whether a container of the pod runs now (its log can be followed). */
const runs = (pod: V1Pod) => (pod.status?.containerStatuses ?? []).some((c) => c.state?.running);

/** Whether a container of the pod ever started (else there is no log to keep). */
const everRan = (pod: V1Pod) => (pod.status?.containerStatuses ?? []).some((c) => c.state?.running || c.state?.terminated || c.lastState?.terminated);

/** At most this many logs are streamed into the store at once (each holds one upload part in memory). */
const CONCURRENT_ARCHIVES = 4;

/**
 * A pod's archive that has not ended after this long (a store or a kubelet that stopped
 * answering) gives its slot back and counts as failed: the pod is let go as any failed one.
 */
const ARCHIVE_TIMEOUT_MS = 15 * 60_000;

async function bounded(work: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, fail) => { timer = setTimeout(() => fail(new Error(`no end after ${ms} ms`)), ms); });
  try {
    await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

export class LogArchiver {
  /** Pods (by name) touched again while their archive ran: the newest touch, run once it ends. */
  private readonly queued = new Map<string, () => void>();
  private readonly active = new Set<string>();
  /** Pods (by uid) whose logs are archived already: a retried finalizer removal does not upload again. */
  private readonly done = new Set<string>();
  /** Archives waiting for one of the CONCURRENT_ARCHIVES slots (an application's executors end together). */
  private readonly slots: (() => void)[] = [];
  private busy = 0;
  private readonly timer: NodeJS.Timeout;
  /** Running pods whose logs are being followed, by uid. */
  private readonly followers = new Map<string, { follower: LogFollower; name: string; appName: string }>();
  /** Two part buffers for every follower: what sending parts costs in memory. */
  private readonly buffers = new PartBuffers(2);

  constructor(private readonly options: LogArchiverOptions) {
    // A missed event, a failed upload or a lost leadership heals at the next pass.
    this.timer = setInterval(() => this.touchAll(), 15_000);
    this.timer.unref();
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.stopFollowing();
  }

  /** Leadership lost (or the service stops): the next leader goes on with the uploads (follow-state.ts) or reads whole. */
  async stopFollowing(): Promise<void> {
    const all = [...this.followers.values()];
    this.followers.clear();
    await Promise.all(all.map(({ follower }) => follower.close(true)));
  }

  touchAll(): void {
    if (!this.options.isLeader()) { void this.stopFollowing(); return; }
    // Pods that went without an end seen here (their application deleted): their follows stop.
    const live = new Set([...this.options.cache.names()].map((name) => this.options.cache.driver(name)?.pod.metadata?.uid));
    for (const pod of this.options.cache.executorPods()) live.add(pod.metadata?.uid);
    for (const [uid, { follower }] of this.followers) {
      if (!live.has(uid)) { this.followers.delete(uid); void follower.close(); }
    }
    for (const name of this.options.cache.names()) this.touch(name);
    for (const pod of this.options.cache.executorPods()) this.touchExecutor(pod);
  }

  /** Bytes of a followed pod's log already in the store (undefined: not followed). */
  sentBytes(podName: string): number | undefined {
    for (const { follower, name } of this.followers.values()) if (name === podName) return follower.sentBytes;
    return undefined;
  }

  /** Starts following a running pod's log, within the follow limit. */
  private follow(pod: V1Pod, appName: string, container: LogContainer, containerName: string | undefined): void {
    const uid = pod.metadata?.uid;
    const name = pod.metadata?.name;
    if (!uid || !name || this.followers.has(uid) || this.done.has(uid) || !runs(pod) || !this.options.cache.application(appName)) return;
    if (this.followers.size >= (this.options.followLimit ?? DEFAULT_FOLLOW_LIMIT)) return;
    const { clients, namespace, archive } = this.options;
    const follower = new LogFollower({
      kc: clients.kc, store: archive.store, namespace, pod: name, podUid: uid, container: containerName, key: archive.key(appName, container),
      spoolDir: this.options.spoolDir ?? join(tmpdir(), 'submission-service-log-spool'), spoolName: `${uid}.part`, buffers: this.buffers,
      maxBytes: this.options.maxLogBytes ?? DEFAULT_MAX_LOG_BYTES, isLeader: this.options.isLeader, log: this.options.log,
      stillRunning: async () => runs(await clients.core.readNamespacedPod({ name, namespace })),
    });
    this.followers.set(uid, { follower, name, appName });
  }

  /** A driver pod or its Application changed: archive now if it has ended and still holds the finalizer. */
  touch(appName: string): void {
    if (!this.options.isLeader()) return;
    const driver = this.options.cache.driver(appName);
    if (!driver || driver.deleted || !hasFinalizer(driver.pod)) return;
    const pod = driver.pod;
    if (!ended(pod)) { this.follow(pod, appName, 'driver', DRIVER_CONTAINER); return; }
    this.schedule(appName, () => this.hold(pod, () => this.saveDriver(appName, pod)), () => this.touch(appName));
  }

  /**
   * An executor pod changed: archive its log now if it has ended (Spark deletes its executors as
   * it ends, or when it scales them down) and still holds the finalizer.
   */
  touchExecutor(pod: V1Pod): void {
    const appName = pod.metadata?.labels?.[LABEL_APP];
    const name = pod.metadata?.name;
    if (!appName || !name || !this.options.isLeader() || !hasFinalizer(pod)) return;
    if (!ended(pod)) {
      const id = pod.metadata?.labels?.['spark-exec-id'];
      if (id && /^[1-9][0-9]{0,5}$/.test(id)) this.follow(pod, appName, `executor-${Number(id)}`, pod.spec?.containers?.[0]?.name);
      return;
    }
    this.schedule(name, () => this.hold(pod, () => this.saveExecutor(appName, pod)), () => this.touchExecutor(pod));
  }

  /** One archive per pod at a time; a touch meanwhile runs once after it. */
  private schedule(key: string, work: () => Promise<void>, again: () => void): void {
    if (this.active.has(key)) { this.queued.set(key, again); return; }
    this.active.add(key);
    void this.slot(work).catch((error: unknown) => this.options.log(`log archive of ${key}: ${(error as Error).message ?? String(error)}`))
      .finally(() => {
        this.active.delete(key);
        const next = this.queued.get(key);
        this.queued.delete(key);
        next?.();
      });
  }

  private async slot<T>(work: () => Promise<T>): Promise<T> {
    if (this.busy >= CONCURRENT_ARCHIVES) await new Promise<void>((ok) => this.slots.push(ok));
    this.busy++;
    try {
      return await work();
    } finally {
      this.busy--;
      this.slots.shift()?.();
    }
  }

  /** Archives a pod's logs (`save`), then lets the pod go; a pod being deleted is let go after giveUpMs whatever happens. */
  private async hold(pod: V1Pod, save: () => Promise<void>): Promise<void> {
    const name = pod.metadata!.name!;
    const uid = pod.metadata!.uid ?? name;
    const deletingSince = pod.metadata?.deletionTimestamp ? new Date(pod.metadata.deletionTimestamp).getTime() : undefined;
    try {
      if (!this.done.has(uid) && everRan(pod)) await bounded(save(), ARCHIVE_TIMEOUT_MS);
      this.done.add(uid);
    } catch (error) {
      // A pod held too long is let go (its log is lost, and said so), never held for ever.
      if (deletingSince === undefined || Date.now() - deletingSince < (this.options.giveUpMs ?? 120_000)) throw error;
      this.options.log(`log archive of ${name}: giving up after ${(error as Error).message}; the pod goes without its log archived`);
    }
    await this.release(pod);
    if (this.done.size > 10_000) this.done.clear();
  }

  /** The driver's log, and the logs of its executors that do not hold the finalizer (admitted before it was added). */
  private async saveDriver(appName: string, driver: V1Pod): Promise<void> {
    if (!this.options.cache.application(appName)) return; // deleted: nothing to keep
    await this.save(appName, 'driver', driver, DRIVER_CONTAINER);
    for (const executor of await this.executors(appName)) {
      if (!hasFinalizer(executor)) await this.saveExecutor(appName, executor);
    }
  }

  private async saveExecutor(appName: string, executor: V1Pod): Promise<void> {
    const id = executor.metadata?.labels?.['spark-exec-id'];
    if (!this.options.cache.application(appName) || !id || !/^[1-9][0-9]{0,5}$/.test(id) || !everRan(executor)) return;
    await this.save(appName, `executor-${Number(id)}`, executor, executor.spec?.containers?.[0]?.name);
  }

  private async executors(appName: string): Promise<V1Pod[]> {
    const list = await this.options.clients.core.listNamespacedPod({ namespace: this.options.namespace, labelSelector: `${LABEL_APP}=${appName},${SPARK_ROLE}=executor` });
    return list.items;
  }

  /** One ended container's log into the archive: what its follower left, else the whole log read now. */
  private async save(appName: string, container: LogContainer, pod: V1Pod, containerName: string | undefined): Promise<void> {
    const uid = pod.metadata?.uid ?? '';
    const followed = this.followers.get(uid);
    this.followers.delete(uid);
    if (followed && await followed.follower.finish()) {
      this.options.log(`log archive: ${appName} ${container} (followed)`);
      return;
    }
    // A follow's or a former leader's unfinished upload of this log would cost storage for ever.
    await this.options.archive.store.abortUnfinished(this.options.archive.key(appName, container)).catch(() => undefined);
    await removeFollowState(this.options.archive.store, this.options.archive.key(appName, container));
    const abort = new AbortController();
    const res = await openPodLog(this.options.clients.kc, { namespace: this.options.namespace, pod: pod.metadata!.name!, container: containerName, signal: abort.signal });
    try {
      const bytes = await this.options.archive.save(appName, container, pipeline(res, capAt(this.options.maxLogBytes ?? DEFAULT_MAX_LOG_BYTES), () => undefined));
      this.options.log(`log archive: ${appName} ${container} (${bytes} bytes)`);
    } finally {
      abort.abort();
    }
  }

  /** Removes the finalizer (a JSON patch that tests it is still at that index). */
  private async release(pod: V1Pod): Promise<void> {
    const index = pod.metadata?.finalizers?.indexOf(LOG_ARCHIVE_FINALIZER) ?? -1;
    if (index < 0 || !this.options.isLeader()) return;
    await this.options.clients.core.patchNamespacedPod({
      name: pod.metadata!.name!, namespace: this.options.namespace,
      body: [
        { op: 'test', path: `/metadata/finalizers/${index}`, value: LOG_ARCHIVE_FINALIZER },
        { op: 'remove', path: `/metadata/finalizers/${index}` },
      ],
    }).catch((error: unknown) => {
      const code = (error as { code?: number }).code;
      if (code !== 404 && code !== 422) throw error; // gone, or changed meanwhile (the next event retries)
    });
  }
}

/** Passes the first `maxBytes` bytes, then capMarker, and ignores the rest. */
function capAt(maxBytes: number): Transform {
  let passed = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      if (passed >= maxBytes) { done(); return; }
      const room = maxBytes - passed;
      passed += chunk.length;
      if (chunk.length < room) { done(null, chunk); return; }
      this.push(chunk.subarray(0, room));
      done(null, Buffer.from(capMarker(maxBytes)));
    },
  });
}
