// The log-archive controller (Kubernetes mode). Admission puts LOG_ARCHIVE_FINALIZER on every
// driver and executor pod; when one has ended (or is being deleted), this controller — under
// the Lease, as one controller of the manager (manager.ts) — streams its log into the archive
// (log-archive.ts), then removes the finalizer, and only then can the pod go. A pod being
// deleted whose log cannot be read is let go after a bounded wait (giveUpMs), so a stuck
// archive never pins pods; with no leader at all, the finalizer's uninstall path is the chart's
// (docs/operations.md, "Uninstalling").
//
// Keys are pods: `driver/<application>` and `executor/<pod>`. Each pass is one pod, on the
// manager's queue type: one pass per pod at a time, at most `workers` archives at once (each
// holds one upload part in memory), a failed archive retried after its own backoff, and every
// pod queued again at each resync. An archive that has not ended after `archiveTimeoutMs` is
// cancelled (its log request and so its upload are aborted) and retried like any failure.
//
// While a pod runs, its log is followed and sent part by part (log-follower.ts), so that at
// its end only the last part is left; pods beyond the follow limit, pods that ended before
// they were followed and follows that cannot vouch for the whole log are read whole at the end.
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream';
import type { V1Pod } from '@kubernetes/client-node';
import { DRIVER_CONTAINER, LABEL_APP, SPARK_ROLE } from '../../domain/index.js';
import type { AppCache } from './app-cache.js';
import type { KubeClients } from './client.js';
import { Controller, type ReconcileContext } from './controller.js';
import { removeFollowState } from './follow-state.js';
import type { Log as LogFn } from './informers.js';
import type { LogArchive, LogContainer } from './log-archive.js';
import { ended, everRan, executorId, hasFinalizer, runs } from './log-archive-pods.js';
import { LogFollower } from './log-follower.js';
import { openPodLog } from './log-request.js';
import { capAt } from './log-size-cap.js';
import { PartBuffers } from './part-buffers.js';
import { finalizerRemoval } from './release-finalizers.js';
import { realTimers, type WorkQueueOptions } from './work-queue.js';

export interface LogArchiverOptions {
  clients: KubeClients;
  namespace: string;
  cache: Pick<AppCache, 'names' | 'application' | 'driver' | 'executorPods'> & Partial<Pick<AppCache, 'driverPods'>>;
  archive: LogArchive;
  /** Only the leader archives and removes finalizers (checked again before each removal). */
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
  /** An archive not ended after this long is cancelled and retried (default 15 min). */
  archiveTimeoutMs?: number;
  /** Archives at once (default 4). */
  workers?: number;
  /** Every pod is queued again this often (default 60 s). */
  resyncMs?: number;
  /** The queue's backoff, bucket, timers and monotonic clock (tests: a fake clock). */
  queue?: WorkQueueOptions;
  /** The wall clock, for how long a pod has been deleting (default Date.now). */
  wallClock?: () => number;
  /** How a pod's log is read (default log-request.ts); the unit tests pass a fake. */
  openLog?: typeof openPodLog;
}

export const DEFAULT_FOLLOW_LIMIT = 32;
export const DEFAULT_MAX_LOG_BYTES = 1024 ** 3;
const ARCHIVE_TIMEOUT_MS = 15 * 60_000;

export const driverKey = (appName: string) => `driver/${appName}`;
export const executorKey = (podName: string) => `executor/${podName}`;

export class LogArchiver {
  readonly controller: Controller;
  /** Pods (by uid) whose logs are archived already: a retried finalizer removal does not upload again. */
  private readonly done = new Set<string>();
  /** Running pods whose logs are being followed, by uid. */
  private readonly followers = new Map<string, { follower: LogFollower; name: string; appName: string }>();
  /** Two part buffers for every follower: what sending parts costs in memory. */
  private readonly buffers = new PartBuffers(2);

  constructor(private readonly options: LogArchiverOptions) {
    this.controller = new Controller({
      name: 'log-archive',
      reconcile: (key, context) => this.reconcile(key, context),
      keys: () => this.keys(),
      onResync: () => this.dropVanishedFollows(),
      workers: options.workers ?? 4,
      resyncMs: options.resyncMs ?? 60_000,
      queue: options.queue,
      mayWrite: options.isLeader,
      onError: (key, error, ms, retries) => options.log(`log archive of ${key}: ${(error as Error)?.message ?? String(error)}; retry ${retries} in ${ms} ms`),
    });
  }

  async close(): Promise<void> {
    this.controller.deactivate();
    await this.stopFollowing();
  }

  /** Leadership lost (or the service stops): the next leader goes on with the uploads (follow-state.ts) or reads whole. */
  async stopFollowing(): Promise<void> {
    const all = [...this.followers.values()];
    this.followers.clear();
    await Promise.all(all.map(({ follower }) => follower.close(true)));
  }

  /** Every pod again (as the resync does). */
  touchAll(): void {
    this.dropVanishedFollows();
    for (const key of this.keys()) this.controller.enqueue(key);
  }

  /** A driver pod or its Application changed. */
  touch(appName: string): void {
    this.controller.enqueue(driverKey(appName));
  }

  /** An executor pod changed (Spark deletes its executors as it ends, or when it scales them down). */
  touchExecutor(pod: V1Pod): void {
    if (pod.metadata?.name && pod.metadata.labels?.[LABEL_APP]) this.controller.enqueue(executorKey(pod.metadata.name));
  }

  /** Bytes of a followed pod's log already in the store (undefined: not followed). */
  sentBytes(podName: string): number | undefined {
    for (const { follower, name } of this.followers.values()) if (name === podName) return follower.sentBytes;
    return undefined;
  }

  private *keys(): Iterable<string> {
    for (const name of this.options.cache.names()) yield driverKey(name);
    for (const pod of this.options.cache.executorPods()) if (pod.metadata?.name) yield executorKey(pod.metadata.name);
  }

  /** Pods that went without an end seen here (their application deleted): their follows stop. */
  private dropVanishedFollows(): void {
    const { cache } = this.options;
    const live = new Set(cache.names().map((name) => cache.driver(name)?.pod.metadata?.uid));
    for (const pod of cache.executorPods()) live.add(pod.metadata?.uid);
    for (const [uid, { follower }] of this.followers) {
      if (!live.has(uid)) { this.followers.delete(uid); void follower.close(); }
    }
  }

  /** The pod of a key, with its application, or undefined when it is gone. */
  private find(key: string): { pod: V1Pod; appName: string; container: LogContainer | undefined; containerName: string | undefined } | undefined {
    const [kind, name] = [key.slice(0, key.indexOf('/')), key.slice(key.indexOf('/') + 1)];
    if (kind === 'driver') {
      const driver = this.options.cache.driver(name);
      // An earlier attempt's driver (restartPolicy OnFailure) still holding the finalizer goes first: else it would never be let go.
      const retried = (this.options.cache.application(name)?.status?.attempt ?? 1) > 1;
      const earlier = retried ? this.options.cache.driverPods?.(name).find((p) => p !== driver?.pod && hasFinalizer(p) && ended(p)) : undefined;
      const pod = earlier ?? (driver && !driver.deleted ? driver.pod : undefined);
      return pod ? { pod, appName: name, container: 'driver', containerName: DRIVER_CONTAINER } : undefined;
    }
    const pod = this.options.cache.executorPods().find((p) => p.metadata?.name === name);
    const appName = pod?.metadata?.labels?.[LABEL_APP];
    if (!pod || !appName) return undefined;
    const id = executorId(pod);
    return { pod, appName, container: id === undefined ? undefined : `executor-${id}`, containerName: pod.spec?.containers?.[0]?.name };
  }

  private async reconcile(key: string, context: ReconcileContext): Promise<void> {
    if (!context.mayWrite()) return; // only the leader reads logs to keep them
    const found = this.find(key);
    if (!found || !hasFinalizer(found.pod)) return;
    const { pod, appName, container, containerName } = found;
    if (!ended(pod)) {
      if (container) this.follow(pod, appName, container, containerName);
      return;
    }
    const save = container === 'driver'
      ? (signal: AbortSignal) => this.saveDriver(appName, pod, signal)
      : (signal: AbortSignal) => this.saveExecutor(appName, pod, signal);
    await this.hold(pod, save, context);
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

  /**
   * Archives a pod's logs (`save`, cancelled at the archive timeout or when the term ends),
   * then lets the pod go. A failure throws (the pod is retried after its backoff), except for a
   * pod deleting for longer than giveUpMs: that one goes without its log, and the log says so.
   */
  private async hold(pod: V1Pod, save: (signal: AbortSignal) => Promise<void>, context: ReconcileContext): Promise<void> {
    const name = pod.metadata!.name!;
    const uid = pod.metadata!.uid ?? name;
    const deletingSince = pod.metadata?.deletionTimestamp ? new Date(pod.metadata.deletionTimestamp).getTime() : undefined;
    try {
      if (!this.done.has(uid) && everRan(pod)) await this.bounded(save, context.signal);
      this.done.add(uid);
    } catch (error) {
      const now = (this.options.wallClock ?? Date.now)();
      if (context.signal.aborted || deletingSince === undefined || now - deletingSince < (this.options.giveUpMs ?? 120_000)) throw error;
      this.options.log(`log archive of ${name}: giving up after ${(error as Error).message}; the pod goes without its log archived`);
    }
    if (context.mayWrite()) await this.release(pod);
    if (this.done.size > 10_000) this.done.clear();
  }

  /** Runs `save` with a signal aborted at the archive timeout or with the term; rejects as soon as it is aborted. */
  private async bounded(save: (signal: AbortSignal) => Promise<void>, term: AbortSignal): Promise<void> {
    const ms = this.options.archiveTimeoutMs ?? ARCHIVE_TIMEOUT_MS;
    const abort = new AbortController();
    const timers = this.options.queue?.timers ?? realTimers;
    const timer = timers.set(() => abort.abort(new Error(`no end after ${ms} ms (cancelled)`)), ms);
    const onTerm = () => abort.abort(new Error('leadership ended'));
    term.addEventListener('abort', onTerm, { once: true });
    const aborted = new Promise<never>((_, fail) => abort.signal.addEventListener('abort', () => fail(abort.signal.reason), { once: true }));
    aborted.catch(() => undefined);
    try {
      await Promise.race([save(abort.signal), aborted]);
    } finally {
      timers.clear(timer);
      term.removeEventListener('abort', onTerm);
      abort.abort(new Error('archive ended'));
    }
  }

  /** The driver's log, and the logs of its executors that do not hold the finalizer (admitted before it was added). */
  private async saveDriver(appName: string, driver: V1Pod, signal: AbortSignal): Promise<void> {
    if (!this.options.cache.application(appName)) return; // deleted: nothing to keep
    await this.save(appName, 'driver', driver, DRIVER_CONTAINER, signal);
    const list = await this.options.clients.core.listNamespacedPod({ namespace: this.options.namespace, labelSelector: `${LABEL_APP}=${appName},${SPARK_ROLE}=executor` });
    for (const executor of list.items) {
      if (!hasFinalizer(executor)) await this.saveExecutor(appName, executor, signal);
    }
  }

  private async saveExecutor(appName: string, executor: V1Pod, signal: AbortSignal): Promise<void> {
    const id = executorId(executor);
    if (!this.options.cache.application(appName) || id === undefined || !everRan(executor)) return;
    await this.save(appName, `executor-${id}`, executor, executor.spec?.containers?.[0]?.name, signal);
  }

  /** One ended container's log into the archive: what its follower left, else the whole log read now. */
  private async save(appName: string, container: LogContainer, pod: V1Pod, containerName: string | undefined, signal: AbortSignal): Promise<void> {
    const uid = pod.metadata?.uid ?? '';
    const followed = this.followers.get(uid);
    this.followers.delete(uid);
    if (followed && await followed.follower.finish()) {
      this.options.log(`log archive: ${appName} ${container} (followed)`);
      return;
    }
    const { archive } = this.options;
    // A follow's or a former leader's unfinished upload of this log would cost storage for ever.
    await archive.store.abortUnfinished(archive.key(appName, container)).catch(() => undefined);
    await removeFollowState(archive.store, archive.key(appName, container));
    // The request ends with `signal`: its stream errors, and so does the upload reading it.
    const res = await (this.options.openLog ?? openPodLog)(this.options.clients.kc, { namespace: this.options.namespace, pod: pod.metadata!.name!, container: containerName, signal });
    const capped = pipeline(res, capAt(this.options.maxLogBytes ?? DEFAULT_MAX_LOG_BYTES), () => undefined);
    const cancel = () => res.destroy(signal.reason instanceof Error ? signal.reason : new Error('archive cancelled'));
    signal.addEventListener('abort', cancel, { once: true });
    try {
      const bytes = await archive.save(appName, container, capped);
      this.options.log(`log archive: ${appName} ${container} (${bytes} bytes)`);
    } finally {
      signal.removeEventListener('abort', cancel);
      res.destroy();
    }
  }

  /** Removes the finalizer (a JSON patch that tests it is still at that index). */
  private async release(pod: V1Pod): Promise<void> {
    const body = finalizerRemoval(pod);
    if (!body) return;
    await this.options.clients.core.patchNamespacedPod({ name: pod.metadata!.name!, namespace: this.options.namespace, body }).catch((error: unknown) => {
      const code = (error as { code?: number }).code;
      if (code !== 404 && code !== 422) throw error; // gone, or changed meanwhile (the next event retries)
    });
  }
}
