// The Connect endpoint's warm pool (off by default): per template, N Spark Connect servers started
// ahead by the service itself (no key, nobody's), so that a new session's first query does not
// wait for a Spark start. A started server counts as ready only once its warm-up (queries the
// service runs in a session of its own, connect/warm-up.ts) succeeded, so that a session's first
// query does not pay a fresh JVM's class loading and first jobs either; a warm-up that fails or
// outlasts WARM_UP_TIMEOUT_MS is a failed start (the server is stopped, the template backs off).
// A ready server is handed out once: it leaves the pool before anything
// else happens (no second session or key ever gets it), and the pool starts another a few seconds
// later (REFILL_DELAY_MS: not beside that server's first query). Servers of
// an older config of their template (another Spark version) and servers that stopped answering
// are replaced at the next check; a template that is gone drains its pool. The pool's servers,
// from their submission on, are this endpoint's (appNames): its sessions write their activity
// (shared-activity.ts), so that every replica's orphan sweep leaves them while this one lives,
// and stops them once it is gone (a replica killed without a drain).
import type { FastifyBaseLogger } from 'fastify';
import { type Clock, systemClock, type TimerHandle } from '../lib/clock.js';
import { SerialCheck } from '../lib/serial-check.js';
import type { ServerAddress } from './placement.js';
import { countWarmPool } from './warm-pool-metrics.js';

/** How often templates are checked and pools topped up (ms). */
export const WARM_CHECK_MS = 5000;
/** After a failed start, a template's next start waits this long, doubled per failure in a row, up to the cap. */
const RETRY_BASE_MS = 10_000;
const RETRY_CAP_MS = 10 * 60_000;
/**
 * After a server is taken, its template's refill waits this long (ms): a new server's start (a
 * JVM: seconds of CPU) would otherwise run beside the taken server's first query, which on local
 * mode's few cores it slowed several fold (bench/connect-first.ts: README, "Benchmarks"). A
 * pooled first query takes 0.3–2.5 s on this two-core machine, loaded or not; a start, a minute.
 */
export const REFILL_DELAY_MS = 3000;
/** A warm-up longer than this is a failed start (a fresh server's first query: 13 s on a quiet machine, about a minute on a loaded one). */
export const WARM_UP_TIMEOUT_MS = 5 * 60_000;

/** A running server of the pool: its application and where it answers. */
export interface WarmServer {
  appName: string;
  template: string | undefined;
  /** The Spark version it runs. */
  version: string;
  port: number;
  server: ServerAddress;
}

/** What the pool needs from the endpoint: the service's own view of templates, starts and stops. */
export interface WarmPoolHost {
  /** The Spark version sessions of `template` (undefined: none named) run now; undefined when the template is gone. */
  versionOf(template: string | undefined): Promise<string | undefined>;
  /** Submits one server (no key) and resolves once it answers; rejects when it could not start. `submitted`: told its application's name as soon as it has one. */
  start(template: string | undefined, version: string, submitted?: (appName: string) => void): Promise<WarmServer>;
  /** Runs the warm-up on a server that answers; rejects when it failed. `signal` aborts it (its timeout, the pool's close). */
  warmUp(server: WarmServer, signal: AbortSignal): Promise<void>;
  /** Whether a ready server still answers. */
  alive(server: WarmServer): Promise<boolean>;
  /** Stops a server's application (one already ended is not an error); `why`: its record's stateDetail. */
  stop(appName: string, why?: string): Promise<void>;
}

interface Member {
  template: string | undefined;
  version: string;
  /** Its application, once submitted (before its server answers). */
  appName?: string;
  /** Set once its server answers and its warm-up succeeded. */
  server?: WarmServer;
  /** Aborts its warm-up while one runs. */
  warming?: AbortController;
  /** Stop it as soon as its start settles (its template changed or went, or the pool closed). */
  drop?: boolean;
}

/** Why a server's warm-up was cancelled: its template changed or went, or the pool closed. */
class NotWanted extends Error {
  constructor() { super('the pool no longer wants this server'); }
}

export interface WarmPoolStatus { template: string | undefined; size: number; ready: number; starting: number }

export class ConnectWarmPool {
  private readonly members = new Set<Member>();
  private readonly retry = new Map<string | undefined, { failures: number; at: number }>();
  /** Templates whose refill waits (REFILL_DELAY_MS after a take): until when, and the timer that then checks. */
  private readonly held = new Map<string | undefined, { until: number; timer: TimerHandle }>();
  /** Starts under way, waited for at close (each stops its server once it settles). */
  private readonly starts = new Set<Promise<void>>();
  private readonly checks: SerialCheck;
  /** Takes the pool out of the servers gauge (warm-pool-metrics.ts). */
  private uncount: (() => void) | undefined;

  /** `sizes`: servers kept ready per template (undefined: sessions that name none). */
  constructor(
    private readonly sizes: ReadonlyMap<string | undefined, number>,
    private readonly host: WarmPoolHost,
    private readonly log: FastifyBaseLogger,
    checkMs = WARM_CHECK_MS,
    private readonly clock: Clock = systemClock,
    private readonly warmUpMs = WARM_UP_TIMEOUT_MS,
    private readonly refillDelayMs = REFILL_DELAY_MS,
  ) {
    this.checks = new SerialCheck(() => this.check(), { everyMs: checkMs, log, failure: 'Spark Connect warm pool: check failed', clock });
  }

  private get closed(): boolean { return this.checks.closed; }

  get enabled(): boolean { return [...this.sizes.values()].some((n) => n > 0); }

  open(): void {
    if (!this.enabled) return;
    this.uncount ??= countWarmPool(this);
    this.checks.open();
  }

  /** Stops the timer and every server still the pool's (warming ones at once, starting ones as their start settles). */
  async close(): Promise<void> {
    this.uncount?.();
    for (const { timer } of this.held.values()) this.clock.clearTimeout(timer);
    this.held.clear();
    await this.checks.close();
    await this.stopAll([...this.members], 'the service stopped');
    await Promise.allSettled([...this.starts]);
  }

  /** A ready server of `template` running `version`, now out of the pool for good; undefined when none is ready. */
  take(template: string | undefined, version: string): WarmServer | undefined {
    if (this.closed) return undefined;
    for (const member of this.members) {
      if (member.template !== template || member.version !== version || !member.server || member.drop) continue;
      this.members.delete(member);
      this.refillLater(template);
      return member.server;
    }
    return undefined;
  }

  /**
   * The template's refill, REFILL_DELAY_MS after the first take: no start meanwhile, then a check.
   * A later take meanwhile does not move it on: under sessions opened faster than the delay, the
   * pool would never refill.
   */
  private refillLater(template: string | undefined): void {
    if (this.held.has(template)) return;
    if (this.refillDelayMs <= 0) {
      this.poke();
      return;
    }
    const timer = this.clock.setTimeout(() => {
      this.held.delete(template);
      this.poke();
    }, this.refillDelayMs);
    this.held.set(template, { until: this.clock.now() + this.refillDelayMs, timer });
  }

  /** A server taken but not handed to anyone (the claim was refused before it was recorded): the pool's again. */
  giveBack(server: WarmServer): void {
    if (this.closed) {
      void this.stopAll([{ template: server.template, version: server.version, server }]);
      return;
    }
    this.members.add({ template: server.template, version: server.version, server });
  }

  /** The applications of the pool's servers, from their submission until they leave the pool (handed out or stopped). */
  appNames(): string[] {
    return [...this.members].map((m) => m.server?.appName ?? m.appName).filter((name): name is string => name !== undefined);
  }

  status(): WarmPoolStatus[] {
    return [...this.sizes].map(([template, size]) => {
      const members = [...this.members].filter((m) => m.template === template && !m.drop);
      const ready = members.filter((m) => m.server).length;
      return { template, size, ready, starting: members.length - ready };
    });
  }

  /** Runs a check soon; checks never overlap (one more runs if asked meanwhile). */
  poke(): void {
    if (this.enabled) this.checks.poke();
  }

  private async check(): Promise<void> {
    for (const [template, size] of this.sizes) {
      if (this.closed) return;
      let version: string | undefined;
      try {
        version = await this.host.versionOf(template);
      } catch (error) {
        this.log.warn({ err: error, template }, 'Spark Connect warm pool: could not read its template');
        continue;
      }
      const members = [...this.members].filter((m) => m.template === template && !m.drop);
      // Gone template: drain. Changed version: a person asking now gets the config of now.
      const stale = members.filter((m) => version === undefined || m.version !== version);
      const dead = await this.deadAmong(members.filter((m) => m.server && !stale.includes(m)));
      await this.stopAll([...stale, ...dead]);
      if (version === undefined || this.closed) continue;
      const kept = members.filter((m) => !stale.includes(m) && !dead.includes(m));
      // More than its size (a server given back after its refill began): starting ones go first.
      const surplus = [...kept.filter((m) => !m.server), ...kept.filter((m) => m.server)].slice(0, Math.max(0, kept.length - size));
      await this.stopAll(surplus);
      for (let i = kept.length; i < size && this.mayStart(template); i++) this.startOne(template, version);
    }
  }

  private async deadAmong(ready: Member[]): Promise<Member[]> {
    const alive = await Promise.all(ready.map((m) => this.host.alive(m.server!).catch(() => false)));
    return ready.filter((_, i) => !alive[i]);
  }

  private mayStart(template: string | undefined): boolean {
    const [retry, held] = [this.retry.get(template), this.held.get(template)];
    return (!retry || this.clock.now() >= retry.at) && (!held || this.clock.now() >= held.until);
  }

  /** Starts one server; not awaited (a Spark start takes a minute): it joins the pool once it answers and its warm-up succeeded. */
  private startOne(template: string | undefined, version: string): void {
    const member: Member = { template, version };
    this.members.add(member);
    const started = this.host.start(template, version, (appName) => { member.appName = appName; }).then((server) => this.warmUp(member, server)).then(async (server) => {
      this.retry.delete(template);
      member.server = server;
      if (member.drop || this.closed) await this.stopAll([member], this.closed ? 'the service stopped' : undefined);
    }, (error: Error) => {
      this.members.delete(member);
      if (error instanceof NotWanted) return; // dropped while it warmed up: not the server's failure
      const failures = (this.retry.get(template)?.failures ?? 0) + 1;
      this.retry.set(template, { failures, at: this.clock.now() + Math.min(RETRY_CAP_MS, RETRY_BASE_MS * 2 ** (failures - 1)) });
      if (!this.closed) this.log.error({ err: error, template, version }, 'Spark Connect warm pool: a server did not start');
    }).finally(() => this.starts.delete(started));
    this.starts.add(started);
  }

  /**
   * The warm-up of a server that just answered, bounded by the warm-up timeout (on the pool's
   * clock). A server whose warm-up fails, times out or is cancelled (dropped meanwhile) is
   * stopped, and the start fails with why.
   */
  private async warmUp(member: Member, server: WarmServer): Promise<WarmServer> {
    const began = this.clock.now();
    const abort = new AbortController();
    member.warming = abort;
    const timer = this.clock.setTimeout(() => abort.abort(new Error(`its warm-up did not end within ${Math.round(this.warmUpMs / 1000)} s`)), this.warmUpMs);
    const aborted = new Promise<never>((_, reject) => abort.signal.addEventListener('abort', () => reject(abort.signal.reason as Error), { once: true }));
    aborted.catch(() => undefined); // read by the race below; an abort after it settled is nobody's error
    try {
      if (member.drop) throw new NotWanted();
      await Promise.race([this.host.warmUp(server, abort.signal), aborted]);
    } catch (error) {
      await this.host.stop(server.appName, `its warm-up did not succeed: ${(error as Error).message}`).catch((stopError: Error) => this.log.error({ err: stopError, appName: server.appName }, 'Spark Connect warm pool: could not stop a server'));
      if (member.drop) throw new NotWanted();
      throw new Error(`${server.appName}: its warm-up failed: ${(error as Error).message}`, { cause: error });
    } finally {
      this.clock.clearTimeout(timer);
      member.warming = undefined;
    }
    this.log.info({ appName: server.appName, template: server.template, version: server.version, warmUpMs: this.clock.now() - began }, 'Spark Connect warm pool: a server is ready');
    return server;
  }

  /** Takes members out of the pool and stops the servers among them; a starting one is stopped once its start settles. */
  private async stopAll(members: Member[], why?: string): Promise<void> {
    for (const member of members) {
      member.drop = true;
      member.warming?.abort(new NotWanted());
      if (member.server) this.members.delete(member);
    }
    const results = await Promise.allSettled(members.filter((m) => m.server).map((m) => this.host.stop(m.server!.appName, why)));
    for (const result of results) {
      if (result.status === 'rejected') this.log.error({ err: result.reason }, 'Spark Connect warm pool: could not stop a server');
    }
  }
}
