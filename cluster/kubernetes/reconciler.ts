// The status controller, the one writer of every Application's status: on every transition,
// from the cache (app-cache.ts), keyed by application name. Idempotent: reconciling a name
// twice writes nothing the second time. It also
// - copies the effective config from the admitted driver pod into an Application written
//   without it (an API without the webhook's rules; with them the API writes it at creation,
//   and that is the config's one write), or written with another one (corrected, once);
// - carries out a user's stop: the API sets `spec.stopRequested`, this writes KILLED and then
//   deletes the driver pod;
// - marks an Application whose driver pod never appeared within `graceMs` UNKNOWN (a crash
//   between the two writes leaves no record that looks alive).
//
// It runs as one controller of the manager (manager.ts, controller.ts): client-go's queue
// guarantees, per-name backoff, resync, only on the leader. Each write first checks that this
// replica still leads (within its renew deadline), carries a timeout, and is aborted when
// leadership ends.
import type { V1Pod } from '@kubernetes/client-node';
import { type AdmissionRules, LABEL_ATTEMPT, readConfig } from '../../domain/index.js';
import { isTerminal, type Transition } from '../cluster.js';
import type { AppCache } from './app-cache.js';
import { APPLICATIONS, FIELD_MANAGER, GROUP, type KubeClients, VERSION } from './client.js';
import { CallTimeoutError, withTimeout } from './call-timeout.js';
import { configCopyPatch } from './config-copy.js';
import { sameJson } from './expected-admission.js';
import { apiStatus, statusCode } from './errors.js';
import type { Log } from './informers.js';
import { deleteJson, patchJson, putJson } from './json-call.js';
import { controllerQueue, controllerRetries, statusWrites, transitionSeconds } from './metrics.js';
import { type ApplicationResource, type ApplicationStatus, desiredStatus } from './records.js';
import { type BackoffOptions, type WorkQueue, type WorkQueueOptions } from './work-queue.js';
import { Controller, type ReconcileContext, type ReconcileResult } from './controller.js';
import { awaitsNextAttempt, statusAfterAttempt } from './attempt-status.js';
import { type AttemptStarterDeps, startNextAttempt } from './attempt-starter.js';

export interface ReconcilerOptions {
  clients: KubeClients;
  namespace: string;
  cache: ReconcilerCache;
  /** How long an Application may be without its driver pod before it is UNKNOWN (default 30 s). */
  graceMs?: number;
  workers?: number;
  log?: Log;
  /** Checked right before every write: false once this replica no longer leads (default: always true). */
  mayWrite?: () => boolean;
  /** Every name is queued again this often, so a missed event heals (default 5 min). */
  resyncMs?: number;
  /** Per-name retry backoff (default 100 ms doubling to 60 s, jitter 0.5). */
  backoff?: BackoffOptions;
  /** Timeout of each write (default 10 s). */
  writeTimeoutMs?: number;
  /** How writes reach the apiserver (default: json-call.ts); the unit tests pass a fake. */
  calls?: Partial<Calls>;
  /** The queue's timers and clock (tests: a fake clock), and its overall retry bucket. */
  queue?: WorkQueueOptions;
  /** The node pools, for how far a retry may raise memory (restartPolicy OnFailure); absent: no raise. */
  rules?: Pick<AdmissionRules, 'pools'>;
  /** Creates a retry's driver pod through admission (kubernetes-cluster.ts); absent: no retries are started. */
  createAttemptPod?: AttemptStarterDeps['createPod'];
  /** The wall clock (ms since the epoch) a retry's interval is measured on (tests: a fake one). */
  wallClock?: () => number;
}

/**
 * PENDING since creation with nothing to say: exactly what an Application without a status
 * means (records.ts reads it so), so it is not written. This halves the controller's writes
 * during a burst of submissions; the first real transition (or a reason to wait) writes it all.
 */
const isInitial = (status: ApplicationStatus): boolean =>
  status.state === 'PENDING' && !status.stateDetail && (status.transitions?.length ?? 0) <= 1;

/** Adds to a set of uids kept for a while (cleared past 10,000: the worst is one more idempotent call). */
function remember(set: Set<string>, uid: string): void {
  if (set.size >= 10_000) set.clear();
  set.add(uid);
}

interface Calls { putJson: typeof putJson; patchJson: typeof patchJson; deletePod: typeof deleteJson }

/** What the status controller reads of the cache (app-cache.ts; a fake in the unit tests). */
export type ReconcilerCache = Pick<AppCache, 'names' | 'application' | 'driver' | 'runningExecutors' | 'forgetDeletedDriver' | 'executorsOf' | 'attemptExecutors' | 'forgetEndedExecutors'>;

export class Reconciler {
  /** Applications (by uid) whose config was corrected: at most once each, so a difference that stays never loops. */
  private readonly corrected = new Set<string>();
  /** Driver pods (by uid) deleted for a stop request. */
  private readonly podsStopped = new Set<string>();
  /** Its queue, workers and terms (controller.ts); registered with the manager (manager.ts). */
  readonly controller: Controller;

  constructor(private readonly options: ReconcilerOptions) {
    this.controller = new Controller({
      name: 'status',
      reconcile: (name, context) => this.reconcile(name, context),
      keys: () => options.cache.names(),
      workers: options.workers,
      resyncMs: options.resyncMs,
      queue: { ...options.backoff, ...options.queue },
      mayWrite: options.mayWrite,
      onLength: (length) => controllerQueue.set(length),
      onError: (name, error, ms, retries) => {
        controllerRetries.inc();
        options.log?.(`reconcile ${name}: ${(error as Error)?.message ?? String(error)}; retry ${retries} in ${ms} ms`);
      },
    });
  }

  private get calls(): Calls { return { putJson, patchJson, deletePod: deleteJson, ...this.options.calls }; }
  private get graceMs() { return this.options.graceMs ?? 30_000; }
  /** An Application's path: its writes go as plain JSON calls on the kept-alive agent (json-call.ts), not through client-node. */
  private path(name: string) { return `/apis/${GROUP}/${VERSION}/namespaces/${this.options.namespace}/${APPLICATIONS}/${name}`; }

  /** The queue of the current term (tests: its lengths and retries). */
  get queue(): WorkQueue<string> | undefined {
    return this.controller.queue;
  }

  /** Leader: reconcile everything once, then every change, and everything again every resync period. */
  activate(): void {
    this.controller.activate();
  }

  /** No longer the leader: stop writing at once (writes in flight are aborted), drop the queue. */
  deactivate(): void {
    this.controller.deactivate();
  }

  enqueue(name: string): void {
    this.controller.enqueue(name);
  }

  /** Resolves when nothing is queued, in flight or waiting out a delay (tests, shutdown). */
  drained(): Promise<void> {
    return this.controller.drained();
  }

  private async reconcile(name: string, context: ReconcileContext): Promise<ReconcileResult> {
    const { cache } = this.options;
    let resource = cache.application(name);
    if (!resource) return;
    const driver = cache.driver(name);
    if (!driver && awaitsNextAttempt(resource) && !resource.spec.stopRequested) return this.startAttempt(resource, context);
    let missing = false;
    let requeueAfterMs: number | undefined;
    if (!driver && !isTerminal(resource.status?.state)) {
      const age = Date.now() - new Date(resource.metadata.creationTimestamp ?? 0).getTime();
      missing = age >= this.graceMs;
      if (!missing) requeueAfterMs = this.graceMs - age + 50;
    }
    // Within the grace period an Application whose pod the watch has not brought yet (it is
    // written first; its pod follows within milliseconds) has nothing to record: the pod's
    // event, or the grace timer above, brings the name back. Every submission's first pass is
    // this one, so it ends before any status is worked out.
    if (!driver && !missing && resource.status === undefined && !resource.spec.stopRequested) return { requeueAfterMs: requeueAfterMs ?? this.graceMs };
    const patch = driver && this.configPatch(resource, driver.pod);
    if (patch) {
      // The patched Application (its new resourceVersion) is what a status write in this pass
      // must build on: the cached one is now stale, and a write from it would only meet a 409.
      const patched = await this.write('config', name, context, (signal) => this.calls.patchJson(this.options.clients.kc, `${this.path(name)}?fieldManager=${FIELD_MANAGER}`, patch, signal));
      if (patched && typeof patched === 'object') resource = patched as typeof resource;
    }
    const status = statusAfterAttempt(resource, desiredStatus(resource, driver, cache.runningExecutors(name), { missing }), driver, { executors: () => cache.attemptExecutors(name), rules: this.options.rules });
    let stored = sameJson(status, resource.status ?? {});
    if (!stored && !(resource.status === undefined && isInitial(status))) {
      const ok = await this.write('status', name, context, (signal) => this.calls.putJson(this.options.clients.kc, `${this.path(name)}/status?fieldManager=${FIELD_MANAGER}`, { ...resource, status }, signal));
      if (ok) this.observe(resource.status?.transitions ?? [], status.transitions ?? []);
      stored = Boolean(ok);
    }
    // A user's stop: the pod goes once KILLED is stored (executors are owned by the driver pod:
    // the garbage collector and Spark remove them).
    const podUid = driver?.pod.metadata?.uid ?? name;
    if (stored && resource.spec.stopRequested && status.state === 'KILLED' && driver && !driver.deleted && !driver.pod.metadata?.deletionTimestamp && !this.podsStopped.has(podUid)) {
      const pod = driver.pod.metadata?.name ?? name;
      const deleted = await this.write('stop', name, context, (signal) => this.calls.deletePod(this.options.clients.kc, `/api/v1/namespaces/${this.options.namespace}/pods/${pod}`, { preconditions: { uid: driver.pod.metadata?.uid } }, signal));
      // Until the pod's deletion reaches the cache, a pass would delete it again: harmless, but not needed.
      if (deleted) remember(this.podsStopped, podUid);
    }
    if (isTerminal(status.state) && driver?.deleted) cache.forgetDeletedDriver(name);
    return requeueAfterMs === undefined ? undefined : { requeueAfterMs };
  }

  /** An application awaiting its next attempt: its driver pod once the interval and the last attempt's executors are over (attempt-starter.ts). */
  private startAttempt(resource: ApplicationResource, context: ReconcileContext): Promise<ReconcileResult> {
    const { createAttemptPod } = this.options;
    if (!createAttemptPod) return Promise.resolve(undefined);
    const { kc } = this.options.clients;
    return startNextAttempt({
      namespace: this.options.namespace, cache: this.options.cache, createPod: createAttemptPod,
      deletePod: (path, options, signal) => this.calls.deletePod(kc, path, options, signal),
      putStatus: (r, status, signal) => this.calls.putJson(kc, `${this.path(r.metadata.name)}/status?fieldManager=${FIELD_MANAGER}`, { ...r, status }, signal),
      write: (kind, name, ctx, run) => this.write(kind, name, ctx, run), now: this.options.wallClock,
    }, resource, context);
  }

  /**
   * The one write of spec.config after creation: the config admission gave the driver pod,
   * with the submission's annotations (GET .../submission answers after the pod is gone), when
   * the Application has none (an API without the webhook's rules) or another one (the API's
   * rules differ from the webhook's: corrected once per Application, and said in the log).
   */
  private configPatch(resource: ApplicationResource, pod: V1Pod) {
    const has = Object.keys(resource.spec.config ?? {}).length > 0;
    if (has) {
      // Per driver pod: a retry's new attempt runs with the config admission gave it (more memory).
      const uid = `${resource.metadata.uid ?? resource.metadata.name}/${pod.metadata?.name}`;
      const admitted = readConfig(pod);
      if (!admitted || this.corrected.has(uid) || sameJson(admitted, resource.spec.config)) return undefined;
      remember(this.corrected, uid);
      if (!pod.metadata?.labels?.[LABEL_ATTEMPT]) this.options.log?.(`reconcile ${resource.metadata.name}: the webhook admitted another config than the API expected (do both read the same node-pool file?); the Application takes the admitted one`);
    }
    return configCopyPatch(resource, pod);
  }

  /**
   * One write, only while this replica leads, with a timeout, aborted when the term ends.
   * A conflict (409) or a vanished object (404) is not an error: the informer brings the news
   * and the name comes back. 422 (the apiserver refused the object, or a JSON patch's test
   * failed) is logged and counted, not retried: the next change of the Application, or the
   * resync, brings the name back. Anything else throws: the name is retried after its backoff.
   * Resolves to what the apiserver answered (truthy) when written, false when not.
   */
  private async write(kind: string, name: string, context: ReconcileContext, run: (signal: AbortSignal) => Promise<unknown>): Promise<unknown> {
    if (!context.mayWrite()) {
      statusWrites.inc({ kind, outcome: 'not-leader' });
      return false;
    }
    try {
      const written = await withTimeout(`the ${kind} write of ${name}`, this.options.writeTimeoutMs ?? 10_000, (_, signal) => run(signal), context.signal);
      statusWrites.inc({ kind, outcome: 'ok' });
      return written ?? true;
    } catch (error) {
      const code = statusCode(error);
      if (code === 409 || code === 404) {
        statusWrites.inc({ kind, outcome: code === 409 ? 'conflict' : 'gone' });
        return false;
      }
      if (code === 422) {
        statusWrites.inc({ kind, outcome: 'invalid' });
        this.options.log?.(`reconcile ${name}: the apiserver refused the ${kind} write (422): ${apiStatus(error).status?.message ?? (error as Error).message}`);
        return false;
      }
      if (context.signal.aborted && error instanceof CallTimeoutError) {
        statusWrites.inc({ kind, outcome: 'not-leader' });
        return false;
      }
      statusWrites.inc({ kind, outcome: 'error' });
      throw error;
    }
  }

  /** Latency of each transition newly written (submitted -> running -> ended). */
  private observe(before: Transition[], after: Transition[]): void {
    for (let i = Math.max(1, before.length); i < after.length; i++) {
      const from = after[i - 1];
      const to = after[i];
      const seconds = (Date.parse(to.at) - Date.parse(from.at)) / 1000;
      if (Number.isFinite(seconds) && seconds >= 0) transitionSeconds.observe({ from: from.state, to: to.state }, seconds);
    }
  }
}
