// The controller: writes each Application's status on every transition, from the cache
// (app-cache.ts), keyed by application name through a work queue that the informers feed.
// Idempotent: reconciling a name twice writes nothing the second time. It also copies the
// effective config from the admitted driver pod into an Application written without it (an
// API without the webhook's rules; with them the API writes it at creation), and marks an
// Application whose driver pod never appeared within `graceMs` UNKNOWN (a crash between
// the two writes leaves no record that looks alive).
//
// The queue (work-queue.ts) gives client-go's guarantees: one worker per name at a time, a
// burst of events for a name collapses into one more pass, a failed name comes back after its
// own exponential backoff with jitter (capped), and a periodic resync queues every name again
// so that a missed event heals. Only the leader (leader-election.ts) runs it; each write
// first checks that this replica still leads (within its renew deadline), carries a
// timeout, and is aborted when leadership ends.
import { isTerminal, type Transition } from '../cluster.js';
import type { AppCache } from './app-cache.js';
import { APPLICATIONS, FIELD_MANAGER, GROUP, type KubeClients, VERSION } from './client.js';
import { CallTimeoutError, withTimeout } from './call-timeout.js';
import { configCopyPatch } from './config-copy.js';
import { canonicalJson } from './expected-admission.js';
import { apiStatus, statusCode } from './errors.js';
import type { Log } from './informers.js';
import { patchJson, putJson } from './json-call.js';
import { controllerQueue, controllerRetries, statusWrites, transitionSeconds } from './metrics.js';
import { type ApplicationStatus, desiredStatus } from './records.js';
import { type BackoffOptions, WorkQueue } from './work-queue.js';

export interface ReconcilerOptions {
  clients: KubeClients;
  namespace: string;
  cache: AppCache;
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
  calls?: { putJson: typeof putJson; patchJson: typeof patchJson };
}

/** One leadership term: its queue, its workers, and what aborts its writes. */
interface Term {
  queue: WorkQueue<string>;
  abort: AbortController;
  workers: Promise<void>[];
  resync?: NodeJS.Timeout;
}

/**
 * PENDING since creation with nothing to say: exactly what an Application without a status
 * means (records.ts reads it so), so it is not written. This halves the controller's writes
 * during a burst of submissions; the first real transition (or a reason to wait) writes it all.
 */
const isInitial = (status: ApplicationStatus): boolean =>
  status.state === 'PENDING' && !status.stateDetail && (status.transitions?.length ?? 0) <= 1;

export class Reconciler {
  private term?: Term;
  /** The workers of the previous term: the next term starts once they have finished. */
  private previous: Promise<unknown> = Promise.resolve();
  private idle: (() => void)[] = [];

  constructor(private readonly options: ReconcilerOptions) {}

  private get calls() { return this.options.calls ?? { putJson, patchJson }; }
  private get graceMs() { return this.options.graceMs ?? 30_000; }
  /** An Application's path: its writes go as plain JSON calls on the kept-alive agent (json-call.ts), not through client-node. */
  private path(name: string) { return `/apis/${GROUP}/${VERSION}/namespaces/${this.options.namespace}/${APPLICATIONS}/${name}`; }

  /** The queue of the current term (tests: its lengths and retries). */
  get queue(): WorkQueue<string> | undefined {
    return this.term?.queue;
  }

  /** Leader: reconcile everything once, then every change, and everything again every resync period. */
  activate(): void {
    if (this.term) return;
    const term: Term = { queue: new WorkQueue<string>(this.options.backoff), abort: new AbortController(), workers: [] };
    this.term = term;
    const queueAll = () => { for (const name of this.options.cache.names()) term.queue.add(name); controllerQueue.set(term.queue.length); };
    queueAll();
    term.resync = setInterval(queueAll, this.options.resyncMs ?? 300_000);
    term.resync.unref();
    // Writes of the last term were aborted when it ended; they have settled before these start.
    void this.previous.then(() => {
      if (term.abort.signal.aborted) return;
      for (let i = 0; i < (this.options.workers ?? 4); i++) term.workers.push(this.work(term));
    });
  }

  /** No longer the leader: stop writing at once (writes in flight are aborted), drop the queue. */
  deactivate(): void {
    const term = this.term;
    if (!term) return;
    this.term = undefined;
    clearInterval(term.resync);
    term.abort.abort();
    term.queue.shutDown();
    controllerQueue.set(0);
    this.previous = Promise.resolve().then(() => Promise.all(term.workers));
    for (const ok of this.idle.splice(0)) ok();
  }

  enqueue(name: string): void {
    this.term?.queue.add(name);
  }

  /** Resolves when nothing is queued, in flight or waiting out a delay (tests, shutdown). */
  drained(): Promise<void> {
    if (!this.term?.queue.busy) return Promise.resolve();
    return new Promise((ok) => this.idle.push(ok));
  }

  private async work(term: Term): Promise<void> {
    const { queue } = term;
    for (;;) {
      const name = await queue.get();
      if (name === undefined) return;
      controllerQueue.set(queue.length);
      try {
        await this.reconcile(name, term);
        queue.forget(name);
      } catch (error) {
        if (!queue.shuttingDown) {
          const ms = queue.addRateLimited(name);
          controllerRetries.inc();
          this.options.log?.(`reconcile ${name}: ${(error as Error)?.message ?? String(error)}; retry ${queue.retries(name)} in ${ms} ms`);
        }
      } finally {
        queue.done(name);
        if (!queue.busy) for (const ok of this.idle.splice(0)) ok();
      }
    }
  }

  private async reconcile(name: string, term: Term): Promise<void> {
    const { cache } = this.options;
    let resource = cache.application(name);
    if (!resource) return;
    const driver = cache.driver(name);
    let missing = false;
    if (!driver && !isTerminal(resource.status?.state)) {
      const age = Date.now() - new Date(resource.metadata.creationTimestamp ?? 0).getTime();
      missing = age >= this.graceMs;
      if (!missing) term.queue.addAfter(name, this.graceMs - age + 50);
    }
    if (driver && Object.keys(resource.spec.config ?? {}).length === 0) {
      // With the submission's annotations, so that GET .../submission still answers after the
      // driver pod is deleted.
      const patch = configCopyPatch(resource, driver.pod);
      // The patched Application (its new resourceVersion) is what a status write in this pass
      // must build on: the cached one is now stale, and a write from it would only meet a 409.
      const patched = patch && await this.write('config', name, term, (signal) => this.calls.patchJson(this.options.clients.kc, `${this.path(name)}?fieldManager=${FIELD_MANAGER}`, patch, signal));
      if (patched && typeof patched === 'object') resource = patched as typeof resource;
    }
    const status = desiredStatus(resource, driver, cache.runningExecutors(name), { missing });
    // Within the grace period an Application whose pod the watch has not brought yet (it is
    // written first; its pod follows within milliseconds) has nothing to record: the pod's
    // event, or the grace timer above, brings the name back.
    const waiting = !driver && !missing && resource.status === undefined;
    if (!waiting && canonicalJson(status) !== canonicalJson(resource.status ?? {}) && !(resource.status === undefined && isInitial(status))) {
      const ok = await this.write('status', name, term, (signal) => this.calls.putJson(this.options.clients.kc, `${this.path(name)}/status?fieldManager=${FIELD_MANAGER}`, { ...resource, status }, signal));
      if (ok) this.observe(resource.status?.transitions ?? [], status.transitions ?? []);
    }
    if (isTerminal(status.state) && driver?.deleted) cache.forgetDeletedDriver(name);
  }

  /**
   * One write, only while this replica leads, with a timeout, aborted when the term ends.
   * A conflict (409) or a vanished object (404) is not an error: the informer brings the news
   * and the name comes back. 422 (the apiserver refused the object, or a JSON patch's test
   * failed) is logged and counted, not retried: the next change of the Application, or the
   * resync, brings the name back. Anything else throws: the name is retried after its backoff.
   * Resolves to what the apiserver answered (truthy) when written, false when not.
   */
  private async write(kind: string, name: string, term: Term, run: (signal: AbortSignal) => Promise<unknown>): Promise<unknown> {
    if (term.abort.signal.aborted || !(this.options.mayWrite?.() ?? true)) {
      statusWrites.inc({ kind, outcome: 'not-leader' });
      return false;
    }
    try {
      const written = await withTimeout(`the ${kind} write of ${name}`, this.options.writeTimeoutMs ?? 10_000, (_, signal) => run(signal), term.abort.signal);
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
      if (term.abort.signal.aborted && error instanceof CallTimeoutError) {
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
