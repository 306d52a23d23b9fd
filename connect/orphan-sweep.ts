// Connect servers no live endpoint holds. An endpoint stops its sessions when they go idle and
// when it is drained; one killed without a drain (SIGKILL, a lost node) stops nothing, and its
// sessions' servers, and its warm pool's, would hold their cores for good unless a client came
// back through another replica. So every endpoint, at its start and then every quarter of the
// idle time, lists the Connect sessions' applications (a warm pool's servers among them) still
// queued or running, leaves those it holds itself (its own idle culling and pool decide for them),
// and stops the others whose last activity is older than the idle time plus the lateness of the
// shared activity (shared-activity.ts orphanAfter): the label every holder writes, a session's on
// its calls and a warm pool's on its servers as long as it lives (Kubernetes mode), else the
// application's start (local mode, where the one endpoint holds every live session and its pool).
// No claim of liveness is needed: a session idle that long is over wherever it is held, a pool
// server not written that long has no pool, and whoever sees it first stops it through the same
// stop as the idle culling (one writer per state: the first stop's request and reason are kept,
// a second is no write). A client that comes back to a session later is refused as ended, as
// after any idle stop (session-adoption.ts).
import type { FastifyBaseLogger } from 'fastify';
import { type Clock, systemClock } from '../lib/clock.js';
import { SerialCheck } from '../lib/serial-check.js';
import { CONNECT_SESSION_LABEL, WARM_SESSION } from './server-app.js';
import { isEnded } from './server-wait.js';
import type { ConnectApp } from './service-api.js';
import { activityOf, markEvery, orphanAfter } from './shared-activity.js';

export interface OrphanSweepOptions {
  /** The Connect sessions' applications not ended, whoever's (the service's own read). */
  servers: () => Promise<ConnectApp[]>;
  /** Whether this endpoint holds the application (its own idle culling then decides). */
  holds: (appName: string) => boolean;
  /** The idle culling's own stop; `why` becomes the record's stateDetail where the cluster keeps one. */
  stop: (appName: string, why: string) => Promise<unknown>;
  /** The idle time (ms, > 0). */
  idleMs: number;
  log: FastifyBaseLogger;
  clock?: Clock;
}

/** The stop's reason (the record's stateDetail). */
export const orphanWhy = (idleMs: number) =>
  `an orphaned Spark Connect session: no live endpoint held it and it was idle for more than ${Math.round(idleMs / 1000)} s (its endpoint went away without stopping it)`;

/** A warm pool server's: its pool stopped writing its activity (its replica went away without a drain). */
export const orphanWarmWhy = (idleMs: number) =>
  `an orphaned Spark Connect warm pool server: no live endpoint kept it and its pool had not written its activity for more than ${Math.round(idleMs / 1000)} s (its endpoint went away without stopping it)`;

const whyOf = (app: ConnectApp, idleMs: number) => (app.labels?.[CONNECT_SESSION_LABEL] === WARM_SESSION ? orphanWarmWhy : orphanWhy)(idleMs);

/** The session's last activity as every endpoint can read it: the shared label, else its application's start. */
export function lastActivityOf(app: ConnectApp): number | undefined {
  const at = activityOf(app.labels) ?? Date.parse(app.startedAt ?? app.createdAt ?? '');
  return Number.isFinite(at) ? at : undefined;
}

/** Of `apps`, the sessions' applications this endpoint does not hold, not ended, idle too long at `now`. */
export function orphansOf(apps: ConnectApp[], holds: (appName: string) => boolean, now: number, idleMs: number): ConnectApp[] {
  return apps.filter((app) => {
    // A warm pool's server (session `warm`) is one too: its pool writes its activity while it lives.
    if (app.labels?.[CONNECT_SESSION_LABEL] === undefined || isEnded(app) || holds(app.appName)) return false;
    const last = lastActivityOf(app);
    return last !== undefined && now - last >= orphanAfter(idleMs);
  });
}

export class OrphanSweep {
  private readonly checks: SerialCheck;
  private readonly clock: Clock;
  /** Stopped by this sweep and not yet seen ended: not stopped again. */
  private readonly stopped = new Set<string>();

  constructor(private readonly options: OrphanSweepOptions) {
    this.clock = options.clock ?? systemClock;
    this.checks = new SerialCheck(() => this.sweep(), { everyMs: markEvery(options.idleMs), log: options.log, failure: 'Spark Connect: the orphan sweep failed', clock: this.clock });
  }

  /** Sweeps now, then every quarter of the idle time. */
  open(): void { this.checks.open(); }

  /** No more sweeps; resolves once the one under way has ended. */
  close(): Promise<void> { return this.checks.close(); }

  /** One sweep (the timer's; tests call it too). */
  async sweep(): Promise<void> {
    const { options } = this;
    const apps = await options.servers();
    const listed = new Set(apps.filter((app) => !isEnded(app)).map((app) => app.appName));
    for (const appName of this.stopped) if (!listed.has(appName)) this.stopped.delete(appName);
    const found = orphansOf(apps, options.holds, this.clock.now(), options.idleMs).filter((app) => !this.stopped.has(app.appName));
    await Promise.all(found.map(async (app) => {
      if (options.holds(app.appName)) return; // taken over here while the list was read
      options.log.warn({ appName: app.appName, sessionId: app.labels?.[CONNECT_SESSION_LABEL], lastActivity: lastActivityOf(app) }, 'Spark Connect server held by no live endpoint and idle: stopping it');
      try {
        await options.stop(app.appName, whyOf(app, options.idleMs));
        this.stopped.add(app.appName);
      } catch (error) {
        options.log.warn({ err: error, appName: app.appName }, 'could not stop an orphaned Spark Connect session; the next sweep tries again');
      }
    }));
  }
}
