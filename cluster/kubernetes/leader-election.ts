// One leader among the API replicas, on a coordination.k8s.io/v1 Lease, with client-go's
// semantics (tools/leaderelection; client-node 1.x has no leader election): lease 15 s, renew
// deadline 10 s, retry 2 s by default. The decisions are pure (lease-decision.ts); this is the
// loop and the apiserver calls around them.
//
// - A candidate reads the Lease every retry period (with jitter) and takes it when it is
//   free, or when its resourceVersion has not changed for the lease duration as measured on
//   this process's monotonic clock (no clocks compared across machines).
// - The leader renews every retry period. Each call has a timeout, and a leader's calls end
//   before its renew deadline. If no renewal succeeded within the renew deadline (measured
//   from when the last successful one STARTED), it stops leading at once: `isLeader` turns
//   false, which the controller checks before every write, and `onStoppedLeading` runs, all
//   before any follower may take over (lease-decision.ts says why).
// - Writes are conditional on the resourceVersion read, so two candidates never both win.
// - A leader that stops cleanly releases the Lease, so a successor need not wait.
import type { V1Lease } from '@kubernetes/client-node';
import { CallTimeoutError, withTimeout } from './call-timeout.js';
import type { KubeClients } from './client.js';
import { statusCode } from './errors.js';
import type { Log } from './informers.js';
import {
  callBudget, checkTiming, CLIENT_GO_TIMING, decide, type LeaseTiming, mayLead, type Observation, retryDelay,
} from './lease-decision.js';
import { jsonLeaseApi, type LeaseApi } from './lease-calls.js';
import { leaderGauge, leaseOutcomes } from './metrics.js';

const RENEWED = 'submission-service/renewed-at';

export interface LeaderElectionOptions {
  clients: KubeClients;
  namespace: string;
  name: string;
  identity: string;
  /** Defaults: client-go's (15 s, 10 s, 2 s). */
  timing?: Partial<LeaseTiming>;
  /** A monotonic clock in ms (default performance.now). */
  now?: () => number;
  log?: Log;
  onStartedLeading: () => void;
  onStoppedLeading: () => void;
  /** The Lease calls; default: plain JSON calls with `clients` (lease-calls.ts). */
  leases?: LeaseApi;
}

export class LeaderElection {
  private readonly api: LeaseApi;
  readonly timing: LeaseTiming;
  private readonly now: () => number;
  private running = false;
  private leader = false;
  private loop?: Promise<void>;
  private wake?: () => void;
  private sleepTimer?: NodeJS.Timeout;
  private deadlineTimer?: NodeJS.Timeout;
  private observed?: Observation;
  /** When the last successful renewal (or the acquisition) started. */
  private renewStartedAt?: number;
  /** Aborts the call in flight on stop: shutting down never waits out a hung call. */
  private stopping = new AbortController();

  constructor(private readonly options: LeaderElectionOptions) {
    this.api = options.leases ?? jsonLeaseApi(options.clients.kc);
    const given = Object.fromEntries(Object.entries(options.timing ?? {}).filter(([, v]) => v !== undefined));
    this.timing = { ...CLIENT_GO_TIMING, ...given };
    checkTiming(this.timing);
    this.now = options.now ?? (() => performance.now());
  }

  /** True only while this replica holds the Lease AND is within its renew deadline: checked before every write. */
  get isLeader(): boolean {
    return this.leader && mayLead(this.renewStartedAt, this.now(), this.timing);
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.stopping = new AbortController();
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    if (this.sleepTimer) clearTimeout(this.sleepTimer);
    this.wake?.();
    this.stopping.abort();
    await this.loop;
    if (this.leader) {
      const could = this.isLeader;
      this.stepDown('stopping');
      if (could) await this.release().catch((error: unknown) => this.say(`could not release lease ${this.options.name}: ${message(error)}`));
    }
  }

  private say(text: string): void {
    this.options.log?.(text);
  }

  private async run(): Promise<void> {
    while (this.running) {
      const started = this.now();
      const budget = callBudget(this.renewStartedAt, this.leader, started, this.timing);
      if (this.leader && budget <= 0) this.stepDown(`lease ${this.options.name} not renewed within ${this.timing.renewDeadlineMs} ms`);
      else await this.attempt(started, budget);
      if (this.leader && !this.isLeader) this.stepDown(`lease ${this.options.name} not renewed within ${this.timing.renewDeadlineMs} ms`);
      if (!this.running) break;
      await new Promise<void>((ok) => {
        this.wake = ok;
        this.sleepTimer = setTimeout(ok, this.leader ? this.timing.retryMs : retryDelay(this.timing));
      });
    }
  }

  /** One try to acquire or renew; every outcome is counted, failures are said. */
  private async attempt(started: number, budget: number): Promise<void> {
    const deadline = started + budget;
    const left = () => Math.max(1, deadline - this.now());
    const { namespace, name, identity } = this.options;
    try {
      let lease: V1Lease | undefined;
      try {
        lease = await withTimeout(`reading lease ${name}`, left(), (_, signal) => this.api.readNamespacedLease({ name, namespace }, signal), this.stopping.signal);
      } catch (error) {
        if (statusCode(error) !== 404) throw error;
      }
      const view = lease && { version: lease.metadata?.resourceVersion ?? '', holder: lease.spec?.holderIdentity, durationSeconds: lease.spec?.leaseDurationSeconds };
      const decision = decide(view, this.observed, identity, this.now(), this.timing);
      this.observed = decision.observed;
      if (decision.action === 'wait') {
        leaseOutcomes.inc({ outcome: 'held-by-other' });
        if (this.leader) this.stepDown(`lease ${name} is held by ${view?.holder}`);
        return;
      }
      const annotations = { ...lease?.metadata?.annotations, [RENEWED]: new Date().toISOString() }; // for people; never read
      const written = decision.action === 'create'
        ? await withTimeout(`creating lease ${name}`, left(), (_, signal) => this.api.createNamespacedLease({ namespace, body: { metadata: { name, namespace, annotations }, spec: this.spec() } }, signal), this.stopping.signal)
        : await withTimeout(`writing lease ${name}`, left(), (_, signal) => this.api.replaceNamespacedLease({ name, namespace, body: { ...lease, metadata: { ...lease!.metadata, annotations }, spec: this.spec(lease) } }, signal), this.stopping.signal);
      this.observed = { version: written.metadata?.resourceVersion ?? '', holder: identity, at: this.now() };
      this.renewed(started, decision.action === 'renew' && this.leader ? 'renewed' : 'acquired');
    } catch (error) {
      if (this.stopping.signal.aborted) return;
      const outcome = statusCode(error) === 409 ? 'conflict' : error instanceof CallTimeoutError ? 'timeout' : 'error';
      leaseOutcomes.inc({ outcome });
      // A conflict is another candidate winning the same race: nothing to say.
      if (outcome !== 'conflict') this.say(`lease ${name}: ${message(error)}`);
    }
  }

  /**
   * acquireTime and renewTime are left out: client-node serializes a Date with milliseconds
   * and the apiserver parses MicroTime with exactly six digits (400 Bad Request). Nothing
   * here reads them (expiry is observed, above). A renewal must change the object (the
   * apiserver does not bump the resourceVersion of a no-op update), so it writes the time in
   * an annotation, for people too.
   */
  private spec(previous?: V1Lease): V1Lease['spec'] {
    const changed = previous?.spec?.holderIdentity !== this.options.identity;
    return {
      ...previous?.spec,
      holderIdentity: this.options.identity,
      leaseDurationSeconds: Math.max(1, Math.ceil(this.timing.leaseMs / 1000)),
      leaseTransitions: (previous?.spec?.leaseTransitions ?? 0) + (changed && previous ? 1 : 0),
    };
  }

  private renewed(started: number, outcome: 'acquired' | 'renewed'): void {
    this.renewStartedAt = started;
    leaseOutcomes.inc({ outcome });
    // Step down exactly at the deadline, even while a call is outstanding or the loop sleeps.
    if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
    this.deadlineTimer = setTimeout(() => {
      if (this.leader && !this.isLeader) this.stepDown(`lease ${this.options.name} not renewed within ${this.timing.renewDeadlineMs} ms`);
    }, Math.max(0, started + this.timing.renewDeadlineMs - this.now()) + 1);
    this.deadlineTimer.unref();
    if (!this.leader) {
      this.say(`${this.options.identity} holds lease ${this.options.name}: this replica runs the controller`);
      this.leader = true;
      leaderGauge.set(1);
      this.options.onStartedLeading();
    }
  }

  private stepDown(why: string): void {
    if (!this.leader) return;
    this.leader = false;
    this.renewStartedAt = undefined;
    if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
    leaderGauge.set(0);
    if (why !== 'stopping') {
      leaseOutcomes.inc({ outcome: 'lost' });
      this.say(`${why}: no longer the leader`);
    }
    this.options.onStoppedLeading();
  }

  private async release(): Promise<void> {
    const { namespace, name, identity } = this.options;
    const ms = this.timing.retryMs;
    const lease = await withTimeout(`reading lease ${name}`, ms, (_, signal) => this.api.readNamespacedLease({ name, namespace }, signal));
    if (lease.spec?.holderIdentity !== identity) return;
    await withTimeout(`releasing lease ${name}`, ms, (_, signal) => this.api.replaceNamespacedLease({ name, namespace, body: { ...lease, spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1 } } }, signal));
  }
}

function message(error: unknown): string {
  return (error as Error)?.message ?? String(error);
}
