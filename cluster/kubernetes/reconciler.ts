// The controller: writes each Application's status on every transition, from the cache
// (app-cache.ts), keyed by application name through a work queue that the informers feed.
// Idempotent: reconciling a name twice writes nothing the second time. It also copies the
// effective config from the admitted driver pod into the Application (the request path
// writes the Application first, before admission has decided the config), and marks an
// Application whose driver pod never appeared within `graceMs` UNKNOWN (a crash between
// the two writes leaves no record that looks alive).
// Only the leader (leader-election.ts) runs it; others keep their queue idle.
import { isTerminal, type Transition } from '../cluster.js';
import type { AppCache } from './app-cache.js';
import { APPLICATIONS, FIELD_MANAGER, GROUP, type KubeClients, VERSION } from './client.js';
import { configCopyPatch } from './config-copy.js';
import { statusCode } from './errors.js';
import type { Log } from './informers.js';
import { statusWrites, transitionSeconds } from './metrics.js';
import { type ApplicationStatus, desiredStatus } from './records.js';

export interface ReconcilerOptions {
  clients: KubeClients;
  namespace: string;
  cache: AppCache;
  /** How long an Application may be without its driver pod before it is UNKNOWN (default 30 s). */
  graceMs?: number;
  workers?: number;
  log?: Log;
}

/** JSON with sorted keys: the apiserver stores objects with its own key order. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value).filter((k) => (value as Record<string, unknown>)[k] !== undefined).sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/**
 * PENDING since creation with nothing to say: exactly what an Application without a status
 * means (records.ts reads it so), so it is not written. This halves the controller's writes
 * during a burst of submissions; the first real transition (or a reason to wait) writes it all.
 */
const isInitial = (status: ApplicationStatus): boolean =>
  status.state === 'PENDING' && !status.stateDetail && (status.transitions?.length ?? 0) <= 1;

export class Reconciler {
  private readonly queue = new Set<string>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private active = false;
  private busy = 0;
  private idle: (() => void)[] = [];

  constructor(private readonly options: ReconcilerOptions) {}

  private get graceMs() { return this.options.graceMs ?? 30_000; }
  private get where() { return { group: GROUP, version: VERSION, plural: APPLICATIONS, namespace: this.options.namespace }; }

  /** Leader: reconcile everything once, then every change. */
  activate(): void {
    this.active = true;
    for (const name of this.options.cache.names()) this.queue.add(name);
    this.pump();
  }

  /** No longer the leader: stop writing (a write in flight finishes). */
  deactivate(): void {
    this.active = false;
    this.queue.clear();
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
  }

  enqueue(name: string): void {
    if (!this.active) return;
    this.queue.add(name);
    this.pump();
  }

  /** Resolves when nothing is queued or in flight (tests, shutdown). */
  drained(): Promise<void> {
    if (this.queue.size === 0 && this.busy === 0) return Promise.resolve();
    return new Promise((ok) => this.idle.push(ok));
  }

  private pump(): void {
    const workers = this.options.workers ?? 4;
    while (this.active && this.busy < workers && this.queue.size > 0) {
      const name = this.queue.values().next().value as string;
      this.queue.delete(name);
      this.busy += 1;
      void this.reconcile(name)
        .catch((error: unknown) => {
          this.options.log?.(`reconcile ${name}: ${(error as Error).message ?? String(error)}; retrying in 1 s`);
          this.later(name, 1000);
        })
        .finally(() => {
          this.busy -= 1;
          if (this.queue.size === 0 && this.busy === 0) for (const ok of this.idle.splice(0)) ok();
          this.pump();
        });
    }
  }

  private later(name: string, ms: number): void {
    if (!this.active || this.timers.has(name)) return;
    this.timers.set(name, setTimeout(() => { this.timers.delete(name); this.enqueue(name); }, ms));
  }

  private async reconcile(name: string): Promise<void> {
    const { cache } = this.options;
    const resource = cache.application(name);
    if (!resource) return;
    const driver = cache.driver(name);
    let missing = false;
    if (!driver && !isTerminal(resource.status?.state)) {
      const age = Date.now() - new Date(resource.metadata.creationTimestamp ?? 0).getTime();
      missing = age >= this.graceMs;
      if (!missing) this.later(name, this.graceMs - age + 50);
    }
    if (driver && Object.keys(resource.spec.config ?? {}).length === 0) {
      // With the submission's annotations, so that GET .../submission still answers after the
      // driver pod is deleted.
      const patch = configCopyPatch(resource, driver.pod);
      if (patch) await this.write('config', name, () => this.options.clients.custom.patchNamespacedCustomObject({
        ...this.where, name, fieldManager: FIELD_MANAGER, body: patch,
      }));
    }
    const status = desiredStatus(resource, driver, cache.runningExecutors(name), { missing });
    if (canonical(status) !== canonical(resource.status ?? {}) && !(resource.status === undefined && isInitial(status))) {
      const ok = await this.write('status', name, () => this.options.clients.custom.replaceNamespacedCustomObjectStatus({
        ...this.where, name, fieldManager: FIELD_MANAGER, body: { ...resource, status },
      }));
      if (ok) this.observe(resource.status?.transitions ?? [], status.transitions ?? []);
    }
    if (isTerminal(status.state) && driver?.deleted) cache.forgetDeletedDriver(name);
  }

  /** A write; a conflict (409) or a vanished object (404) is not an error: the informer brings the news and the name comes back. */
  private async write(kind: string, name: string, run: () => Promise<unknown>): Promise<boolean> {
    try {
      await run();
      statusWrites.inc({ kind, outcome: 'ok' });
      return true;
    } catch (error) {
      const code = statusCode(error);
      if (code === 409 || code === 404 || code === 422) {
        statusWrites.inc({ kind, outcome: 'conflict' });
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
