// Logs kept after the pods go (Kubernetes mode). Admission puts LOG_ARCHIVE_FINALIZER on every
// driver and executor pod; when one has ended (or is being deleted), the controller — the one
// writer, under the Lease — streams its log into the object store, then removes the
// finalizer, and only then can the pod go. A pod being deleted whose log cannot be read is let
// go after a bounded wait (giveUpMs), so a stuck archive never pins pods. Reads of an
// application's log fall back to the archive once its pod is gone.
//
// Memory: a log is streamed from the apiserver into a multipart upload one part at a time
// (object-store.ts), so a 100 MB log costs one part of buffer, not 100 MB.
import { PassThrough, type Readable } from 'node:stream';
import { Log, type V1Pod } from '@kubernetes/client-node';
import { DRIVER_CONTAINER, LABEL_APP, LOG_ARCHIVE_FINALIZER, SPARK_ROLE } from '../../webhook/domain/index.js';
import type { ObjectStore } from '../history/object-store.js';
import type { AppCache } from './app-cache.js';
import type { KubeClients } from './client.js';
import type { Log as LogFn } from './informers.js';

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
}

const hasFinalizer = (pod: V1Pod) => pod.metadata?.finalizers?.includes(LOG_ARCHIVE_FINALIZER) ?? false;

/** The driver has ended (its phase says so, or it is being deleted and no container runs). */
function ended(pod: V1Pod): boolean {
  const phase = pod.status?.phase;
  if (phase === 'Succeeded' || phase === 'Failed') return true;
  if (!pod.metadata?.deletionTimestamp) return false;
  return !(pod.status?.containerStatuses ?? []).some((c) => c.state?.running);
}

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

  constructor(private readonly options: LogArchiverOptions) {
    // A missed event, a failed upload or a lost leadership heals at the next pass.
    this.timer = setInterval(() => this.touchAll(), 15_000);
    this.timer.unref();
  }

  close(): void {
    clearInterval(this.timer);
  }

  touchAll(): void {
    for (const name of this.options.cache.names()) this.touch(name);
    for (const pod of this.options.cache.executorPods()) this.touchExecutor(pod);
  }

  /** A driver pod or its Application changed: archive now if it has ended and still holds the finalizer. */
  touch(appName: string): void {
    if (!this.options.isLeader()) return;
    const driver = this.options.cache.driver(appName);
    if (!driver || driver.deleted || !hasFinalizer(driver.pod) || !ended(driver.pod)) return;
    const pod = driver.pod;
    this.schedule(appName, () => this.hold(pod, () => this.saveDriver(appName)), () => this.touch(appName));
  }

  /**
   * An executor pod changed: archive its log now if it has ended (Spark deletes its executors as
   * it ends, or when it scales them down) and still holds the finalizer.
   */
  touchExecutor(pod: V1Pod): void {
    const appName = pod.metadata?.labels?.[LABEL_APP];
    const name = pod.metadata?.name;
    if (!appName || !name || !this.options.isLeader() || !hasFinalizer(pod) || !ended(pod)) return;
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
  private async saveDriver(appName: string): Promise<void> {
    if (!this.options.cache.application(appName)) return; // deleted: nothing to keep
    await this.save(appName, 'driver', appName, DRIVER_CONTAINER);
    for (const executor of await this.executors(appName)) {
      if (!hasFinalizer(executor)) await this.saveExecutor(appName, executor);
    }
  }

  private async saveExecutor(appName: string, executor: V1Pod): Promise<void> {
    const id = executor.metadata?.labels?.['spark-exec-id'];
    if (!this.options.cache.application(appName) || !id || !/^[1-9][0-9]{0,5}$/.test(id) || !everRan(executor)) return;
    await this.save(appName, `executor-${Number(id)}`, executor.metadata!.name!, executor.spec?.containers?.[0]?.name);
  }

  private async executors(appName: string): Promise<V1Pod[]> {
    const list = await this.options.clients.core.listNamespacedPod({ namespace: this.options.namespace, labelSelector: `${LABEL_APP}=${appName},${SPARK_ROLE}=executor` });
    return list.items;
  }

  /** Streams one container's log (as it is now, not followed) into the archive. */
  private async save(appName: string, container: LogContainer, pod: string, containerName: string | undefined): Promise<void> {
    const stream = new PassThrough({ highWaterMark: 256 * 1024 });
    const abort = await new Log(this.options.clients.kc).log(this.options.namespace, pod, containerName ?? '', stream, { follow: false });
    try {
      const bytes = await this.options.archive.save(appName, container, stream);
      this.options.log(`log archive: ${appName} ${container} (${bytes} bytes)`);
    } catch (error) {
      abort.abort();
      throw error;
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
