// The warm pool (off by default): per template, N kernels started ahead with their SparkSession
// up, handed out by `POST /api/kernels` for that template. Pooled kernels are ordinary
// applications (labelled with their pool); unclaimed ones are not listed, not reachable by id and
// never culled. A claim is confirmed by the kernel's launcher, which keeps it and says it again
// in every hello: a restarted gateway neither hands a claimed kernel out again nor loses it.
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../lib/clock.js';
import { SerialCheck } from '../lib/serial-check.js';
import type { KernelSession } from './kernel-session.js';
import { poolChecksTotal } from './metrics.js';

/** How often templates are checked (a deleted one drains its pool) and pools topped up. */
export const POOL_CHECK_MS = 5000;

/** What the pool needs from the registry that owns the kernels. */
export interface PoolHost {
  sessions(): Iterable<KernelSession>;
  /** Submits one kernel for `template`'s pool, of the template's config `version` (the gateway's own key). */
  startPooled(template: string, version: string): Promise<KernelSession>;
  /** Ends a pooled kernel and its application. */
  removePooled(id: string): Promise<void>;
  /** A fingerprint of `template`'s config, undefined when it is gone or not a kernel (the gateway's own key). */
  templateVersion(template: string): Promise<string | undefined>;
}

export interface PoolStatus { template: string; size: number; ready: number; starting: number }

export class WarmPool {
  private readonly checks: SerialCheck;
  /** Templates found missing at the last check: not refilled until they are back. */
  private readonly missing = new Set<string>();

  constructor(
    private readonly sizes: ReadonlyMap<string, number>,
    private readonly host: PoolHost,
    private readonly log: FastifyBaseLogger,
    checkMs = POOL_CHECK_MS,
    clock?: Clock,
  ) {
    this.checks = new SerialCheck(() => this.check(), { everyMs: checkMs, log, failure: 'warm pool check failed', clock, ran: () => poolChecksTotal.inc() });
  }

  get enabled(): boolean { return [...this.sizes.values()].some((n) => n > 0); }

  open(): void {
    if (this.enabled) this.checks.open();
  }

  async close(): Promise<void> {
    await this.checks.close();
  }

  /** A ready kernel of `template`'s pool, now claimed for `owner` (a key id); undefined when none is ready. */
  async take(template: string, owner?: string): Promise<KernelSession | undefined> {
    if (!this.sizes.get(template)) return undefined;
    for (const session of this.members(template)) {
      if (!session.claimable) continue;
      if (await session.claimIt(owner)) {
        this.poke(); // refill
        return session;
      }
    }
    return undefined;
  }

  status(): PoolStatus[] {
    return [...this.sizes].map(([template, size]) => {
      const members = this.members(template);
      const ready = members.filter((s) => s.claimable).length;
      return { template, size, ready, starting: members.length - ready };
    });
  }

  /** Runs a check soon; checks never overlap (one more runs if asked meanwhile). */
  poke(): void {
    if (this.enabled) this.checks.poke();
  }

  /** Kernels of the pool that are not someone's (claim unknown counts: it may still be free). */
  private members(template: string): KernelSession[] {
    return [...this.host.sessions()].filter((s) => s.pool === template && s.claim !== 'claimed' && s.executionState !== 'dead');
  }

  private async check(): Promise<void> {
    for (const [template, size] of this.sizes) {
      if (this.checks.closed) return;
      let version: string | undefined;
      try {
        version = await this.host.templateVersion(template);
      } catch (error) {
        this.log.warn({ err: error, template }, 'could not check the template of a warm pool');
        continue;
      }
      const members = this.members(template);
      if (version === undefined) {
        if (!this.missing.has(template)) this.log.warn({ template }, 'the template of a warm pool is gone or not a kernel: its pool drains');
        this.missing.add(template);
        await this.removeAll(members.filter((s) => s.unclaimed));
        continue;
      }
      this.missing.delete(template);
      // Replaced, at most once per check: a kernel whose Spark failed (never handed out), and one
      // started from an older config of the template (a person asking now gets the config of now).
      const stale = members.filter((s) => s.unclaimed && (s.sparkBroken || s.poolVersion !== version));
      await this.removeAll(stale);
      const missing = size - (members.length - stale.length);
      const started = await Promise.allSettled(Array.from({ length: Math.max(0, missing) }, () => this.host.startPooled(template, version)));
      for (const result of started) {
        if (result.status === 'rejected') this.log.error({ err: result.reason, template }, 'could not start a kernel for the warm pool');
      }
      if (stale.length) this.log.info({ template, count: stale.length }, 'replaced warm pool kernels whose Spark failed or whose template changed');
    }
  }

  private async removeAll(sessions: KernelSession[]): Promise<void> {
    const results = await Promise.allSettled(sessions.map((s) => this.host.removePooled(s.id)));
    for (const result of results) {
      if (result.status === 'rejected') this.log.error({ err: result.reason }, 'could not remove a kernel of the warm pool');
    }
  }
}
