// The one cache of a process in Kubernetes mode: informers on Application resources, driver
// pods and executor pods of the applications namespace, indexed by application name, and the
// API record of every application computed once per change (records.ts). Reads (get, list)
// are answered from here: no apiserver call per request. A sorted index (newest first) makes
// a page of 100 out of 10,000 a binary search and a short walk. Every change of a record is
// told to `onRecord` (the event feed) and every touched name to `onTouch` (the reconciler).
import type { KubeConfig, KubernetesObject, V1Pod } from '@kubernetes/client-node';
import type { ApplicationState } from '../../schemas/index.js';
import { type AdmissionRules, attemptPodName, LABEL_APP, LABEL_JOB, SPARK_ROLE } from '../../domain/index.js';
import type { AppRecord, ListQuery, Page } from '../cluster.js';
import { decodeCursor, encodeCursor, matchesQuery } from '../paging.js';
import { APPLICATIONS, GROUP, type KubeClients, VERSION } from './client.js';
import { DeletedDrivers } from './deleted-drivers.js';
import { type Log, type ResilientInformer, resilientInformer } from './informers.js';
import { applicationsByState, malformedAnnotations } from './metrics.js';
import { newestFirst, type OrderKey, orderKeyOf, positionIn } from './newest-first-order.js';
import { type ApplicationResource, desiredStatus, type DriverView, toRecord, unreadableConfig } from './records.js';
import { statusAfterAttempt } from './attempt-status.js';

export const DRIVER_SELECTOR = `${LABEL_JOB},${SPARK_ROLE}=driver`;
export const EXECUTOR_SELECTOR = `${SPARK_ROLE}=executor,${LABEL_APP}`;

export interface AppCacheOptions {
  clients: KubeClients;
  namespace: string;
  log?: Log;
  /** `json`: the record's JSON (made here to tell changes), so that the feed need not make it again. */
  onRecord?: (type: 'changed' | 'deleted', record: AppRecord, json: string) => void;
  onTouch?: (appName: string) => void;
  /** Every executor pod added or changed (the log archive holds ended ones until their log is kept). */
  onExecutor?: (pod: V1Pod) => void;
  /** The node pools, so that a read shows a retry's memory as the controller decides it (attempt-status.ts). */
  rules?: Pick<AdmissionRules, 'pools'>;
}

type Resource = ApplicationResource;
// client-node types creationTimestamp as a Date; watch events carry it as a string.
type Watched = KubernetesObject & { spec?: unknown };

export class AppCache {
  private readonly applications: ResilientInformer<Watched>;
  private readonly drivers: ResilientInformer<V1Pod>;
  private readonly executors: ResilientInformer<V1Pod>;
  private readonly records = new Map<string, AppRecord>();
  private readonly serialized = new Map<string, string>();
  /** Final state of driver pods deleted while their Application lives: "COMPLETED, then deleted" stays COMPLETED. */
  private readonly deletedDrivers = new DeletedDrivers((appName) => this.application(appName) !== undefined);
  /** Executor pods seen ended (by application, then name), until the next attempt starts: an OOM kill Spark deleted still says why its attempt failed. */
  private readonly endedExecutors = new Map<string, Map<string, V1Pod>>();
  /** Running executor pod names by application. */
  private readonly running = new Map<string, Set<string>>();
  private readonly index: OrderKey[] = [];
  private readonly byState = new Map<ApplicationState, number>();
  private started?: Promise<void>;
  private readonly waiters = new Map<string, Set<() => void>>();

  constructor(private readonly options: AppCacheOptions) {
    const { kc, core, custom } = options.clients;
    const ns = options.namespace;
    this.applications = resilientInformer<Watched>(kc as KubeConfig, 'applications', `/apis/${GROUP}/${VERSION}/namespaces/${ns}/${APPLICATIONS}`,
      () => custom.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: ns, plural: APPLICATIONS }) as never, { log: options.log });
    this.drivers = resilientInformer<V1Pod>(kc, 'driver pods', `/api/v1/namespaces/${ns}/pods`,
      () => core.listNamespacedPod({ namespace: ns, labelSelector: DRIVER_SELECTOR }), { labelSelector: DRIVER_SELECTOR, log: options.log });
    this.executors = resilientInformer<V1Pod>(kc, 'executor pods', `/api/v1/namespaces/${ns}/pods`,
      () => core.listNamespacedPod({ namespace: ns, labelSelector: EXECUTOR_SELECTOR }), { labelSelector: EXECUTOR_SELECTOR, log: options.log });

    const apps = this.applications.informer;
    apps.on('add', (r) => this.putApplication(r as unknown as Resource));
    apps.on('update', (r) => this.putApplication(r as unknown as Resource));
    apps.on('delete', (r) => this.dropApplication(r as unknown as Resource));
    const drivers = this.drivers.informer;
    drivers.on('add', (p) => { this.checkConfig(p); this.driverChanged(p); });
    drivers.on('update', (p) => { this.checkConfig(p); this.driverChanged(p); });
    drivers.on('delete', (p) => { this.deletedDrivers.keep(p); this.driverChanged(p); });
    const executors = this.executors.informer;
    executors.on('add', (p) => { this.options.onExecutor?.(p); this.executorChanged(p, false); });
    executors.on('update', (p) => { this.options.onExecutor?.(p); this.executorChanged(p, false); });
    executors.on('delete', (p) => { this.keepEnded(p); this.executorChanged(p, true); });
  }

  /** Lists and watches the three; resolves once all are listed (pods first, so the first records see their pods). */
  start(): Promise<void> {
    this.started ??= (async () => {
      await Promise.all([this.drivers.start(), this.executors.start()]);
      await this.applications.start();
      this.deletedDrivers.listed();
    })();
    return this.started;
  }

  async stop(): Promise<void> {
    await Promise.all([this.applications.stop(), this.drivers.stop(), this.executors.stop()]);
  }

  // ---- reads -------------------------------------------------------------------------------

  get(appName: string): AppRecord | undefined {
    return this.records.get(appName);
  }

  list(query: ListQuery): Page<AppRecord> {
    let start = 0;
    if (query.cursor) {
      const [createdAt, name] = decodeCursor(query.cursor);
      start = positionIn(this.index, { createdAt, name });
      if (this.index[start] && newestFirst(this.index[start], { createdAt, name }) === 0) start += 1;
    }
    const items: AppRecord[] = [];
    let more = false;
    for (let i = start; i < this.index.length; i++) {
      const record = this.records.get(this.index[i].name);
      if (!record || !matchesQuery(record, query)) continue;
      if (items.length === query.limit) { more = true; break; }
      items.push(record);
    }
    return { items, next: more ? encodeCursor(items[items.length - 1]) : null };
  }

  /** Every application name, for a full reconcile. */
  names(): string[] {
    return this.index.map((k) => k.name);
  }

  application(appName: string): Resource | undefined {
    return this.applications.informer.get(appName, this.options.namespace) as unknown as Resource | undefined;
  }

  /** The current attempt's driver pod (attemptPodName), live, else the last state of a deleted one. */
  driver(appName: string): DriverView | undefined {
    const name = attemptPodName(appName, this.application(appName)?.status?.attempt ?? 1);
    const live = this.drivers.informer.get(name, this.options.namespace);
    if (live) return { pod: live, deleted: false };
    const gone = this.deletedDrivers.get(name);
    return gone ? { pod: gone, deleted: true } : undefined;
  }

  /** The application's driver pods that exist now (every attempt's). */
  driverPods = (appName: string): V1Pod[] => this.drivers.informer.list(this.options.namespace).filter((p) => p.metadata?.labels?.[LABEL_APP] === appName);
  /** The application's executor pods that exist now (any attempt's). */
  executorsOf = (appName: string): V1Pod[] => this.executorPods().filter((p) => p.metadata?.labels?.[LABEL_APP] === appName);

  /** The executors of the current attempt as last seen: those that exist, and those seen ended since it started. */
  attemptExecutors(appName: string): V1Pod[] {
    const live = this.executorsOf(appName);
    return [...live, ...[...this.endedExecutors.get(appName)?.values() ?? []].filter((p) => !live.some((l) => l.metadata?.name === p.metadata?.name))];
  }

  /** The next attempt starts: the ended executors of the one before say nothing about it. */
  forgetEndedExecutors = (appName: string): void => void this.endedExecutors.delete(appName);

  /** Every executor pod of the namespace that is ours (the log archive's periodic pass). */
  executorPods(): readonly V1Pod[] {
    return this.executors.informer.list(this.options.namespace);
  }

  runningExecutors(appName: string): number {
    return this.running.get(appName)?.size ?? 0;
  }

  /** Forgets a deleted driver's last state once its Application recorded the end. */
  forgetDeletedDriver = (appName: string): void => this.deletedDrivers.forget(attemptPodName(appName, this.application(appName)?.status?.attempt ?? 1));

  /**
   * Resolves once the cached record of `appName` passes `check` (or after `timeoutMs`, with
   * whatever it is then): the API's own writes are visible to its next read.
   */
  async until(appName: string, check: (record: AppRecord | undefined) => boolean, timeoutMs = 5000): Promise<AppRecord | undefined> {
    const deadline = Date.now() + timeoutMs;
    while (!check(this.records.get(appName)) && Date.now() < deadline) {
      await new Promise<void>((ok) => {
        let set = this.waiters.get(appName);
        if (!set) this.waiters.set(appName, (set = new Set()));
        const done = () => { clearTimeout(timer); set!.delete(done); if (set!.size === 0) this.waiters.delete(appName); ok(); };
        const timer = setTimeout(done, Math.max(0, deadline - Date.now()));
        set.add(done);
      });
    }
    return this.records.get(appName);
  }

  private notify(name: string): void {
    const set = this.waiters.get(name);
    if (set) for (const done of [...set]) done();
  }

  // ---- maintenance -------------------------------------------------------------------------

  private putApplication(resource: Resource): void {
    const name = resource.metadata.name;
    if (!this.records.has(name)) {
      const key = orderKeyOf(resource);
      this.index.splice(positionIn(this.index, key), 0, key);
    }
    this.refresh(name);
  }

  private dropApplication(resource: Resource): void {
    const name = resource.metadata.name;
    const key = orderKeyOf(resource);
    const at = positionIn(this.index, key);
    if (this.index[at]?.name === name) this.index.splice(at, 1);
    const record = this.records.get(name);
    const json = this.serialized.get(name);
    this.records.delete(name);
    this.serialized.delete(name);
    this.deletedDrivers.forgetApplication(name);
    this.endedExecutors.delete(name);
    if (record) {
      this.count(record.state, -1);
      this.options.onRecord?.('deleted', record, json ?? JSON.stringify(record));
    }
    this.notify(name);
    this.options.onTouch?.(name);
  }

  private driverChanged(pod: V1Pod): void {
    const name = pod.metadata?.name;
    if (!name) return;
    // A live pod of that name again replaces the last state of a deleted one.
    if (this.drivers.informer.get(name, this.options.namespace)) this.deletedDrivers.forget(name);
    // A retry's pod has a name of its own (attemptPodName); its application is on its label.
    this.refresh(pod.metadata?.labels?.[LABEL_APP] ?? name);
  }

  /** An executor that ended (its container terminated) is kept as last seen, for its attempt's end. */
  private keepEnded(pod: V1Pod): void {
    const app = pod.metadata?.labels?.[LABEL_APP];
    const name = pod.metadata?.name;
    if (app && name && pod.status?.containerStatuses?.some((c) => c.state?.terminated)) this.endedExecutors.set(app, (this.endedExecutors.get(app) ?? new Map()).set(name, pod));
  }

  /** A config annotation edited into something unreadable: said and counted here, shown in stateDetail (records.ts). */
  private checkConfig(pod: V1Pod): void {
    const problem = unreadableConfig(pod);
    if (!problem) return;
    malformedAnnotations.inc({ component: 'api' });
    this.options.log?.(`driver pod ${pod.metadata?.name}: ${problem}`);
  }

  private executorChanged(pod: V1Pod, deleted: boolean): void {
    const app = pod.metadata?.labels?.[LABEL_APP];
    const name = pod.metadata?.name;
    if (!app || !name) return;
    let set = this.running.get(app);
    const isRunning = !deleted && pod.status?.phase === 'Running';
    if (isRunning) {
      if (!set) this.running.set(app, (set = new Set()));
      if (set.has(name)) return;
      set.add(name);
    } else {
      if (!set?.delete(name)) return;
      if (set.size === 0) this.running.delete(app);
    }
    this.refresh(app);
  }

  /** Recomputes one record; tells the feed when what the API shows changed, and the reconciler in any case. */
  private refresh(name: string): void {
    const resource = this.application(name);
    if (resource) {
      const driver = this.driver(name);
      const status = statusAfterAttempt(resource, desiredStatus(resource, driver, this.runningExecutors(name)), driver, { executors: () => this.attemptExecutors(name), rules: this.options.rules });
      const record = toRecord(resource, status, driver);
      const previous = this.records.get(name);
      const text = JSON.stringify(record);
      if (this.serialized.get(name) !== text) {
        this.records.set(name, record);
        this.serialized.set(name, text);
        // The gauge only when the state moved: most changes are details (times, stateDetail).
        if (previous?.state !== record.state) {
          if (previous) this.count(previous.state, -1);
          this.count(record.state, 1);
        }
        this.options.onRecord?.('changed', record, text);
      }
      // Waiters are told of every change, shown or not: a stop waits for its pod's deletion too.
      this.notify(name);
    }
    this.options.onTouch?.(name);
  }

  private count(state: ApplicationState, delta: number): void {
    const n = (this.byState.get(state) ?? 0) + delta;
    this.byState.set(state, n);
    applicationsByState.set({ state }, n);
  }
}
