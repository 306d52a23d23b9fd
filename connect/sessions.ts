// The endpoint's sessions: one application per (key, template, client session id), submitted at
// the session's first call, waited for until its Connect server answers, followed lazily (a call
// that cannot reach the server asks the API whether the application ended) and stopped when idle;
// taken over when started through another replica (session-adoption.ts) or given a server of the
// warm pool (warm-handout.ts); the servers no live endpoint holds are swept (orphan-sweep.ts).
import { performance } from 'node:perf_hooks';
import type { FastifyBaseLogger } from 'fastify';
import type { ConnectServerJars } from '../domain/connect-gate.js';
import { type Clock, systemClock, type TimerHandle } from '../lib/clock.js';
import { GrpcRefusal, GrpcStatus } from './grpc-status.js';
import { type ConnectCaller, sessionRefusal } from './session-owners.js';
import { loopbackPlacement, type ServerPlacement } from './placement.js';
import type { EndedSession } from './last-run.js';
import { OrphanSweep } from './orphan-sweep.js';
import { isEnded, waitForServer } from './server-wait.js';
import { sessionSubmission } from './server-app.js';
import type { ConnectApp, ServiceApi } from './service-api.js';
import { type ConnectSession, type Ended, endedMessage } from './session.js';
import { type Adoption, adoptSession } from './session-adoption.js';
import { Upstreams } from './relay.js';
import { ActivityBook, type SharedActivity } from './shared-activity.js';
import { type WarmOptions, warmPoolHost } from './warm-host.js';
import { WarmHandout } from './warm-handout.js';
import { ConnectWarmPool } from './warm-pool.js';

/** Ended sessions remembered (so that their id is not started again by a late call): the newest this many. */
const ENDED_KEPT = 10_000;

export type { ConnectSession };

export interface SessionsOptions {
  api: ServiceApi;
  log: FastifyBaseLogger;
  /** The Spark version of a session without a template (or whose template names none). */
  defaultVersion: string;
  /** A 3.x Connect server's jars, by version (connect/server-app.ts connectServerConf); undefined: Spark resolves the artifact. */
  serverJars: (version: string) => ConnectServerJars | undefined;
  /** Stop sessions with no call this long (ms); 0: never. */
  idleMs: number;
  /** How often the server's port is tried while it starts (ms). */
  probeMs?: number;
  /** Where sessions' servers run (default: local mode's loopback ports). */
  placement?: ServerPlacement;
  /**
   * Stops an application without a key (local mode: the cluster itself), for what the endpoint
   * ends by itself (idle, shutdown): the owner's key may have been revoked meanwhile. `why`
   * becomes its record's stateDetail.
   */
  stopApp?: (appName: string, why: string) => Promise<unknown>;
  /** Sessions of the service's last run (connect/last-run.ts): refused as ended, as if this endpoint had ended them. */
  ended?: EndedSession[];
  /** The warm pool (off when absent or all sizes are 0): servers the service starts ahead, with no key. */
  warm?: WarmOptions;
  /** Kubernetes mode: the last activity shared by the replicas through the application (connect/shared-activity.ts). */
  activity?: SharedActivity;
  /**
   * Every application carrying a session id, whoever submitted it, read with the service's own
   * rights (Kubernetes mode: the cache; local mode: the records). The first of them decides whose
   * the session is, so the read must see them all, not one page of the API's list as the caller.
   */
  sessionClaims: (sessionId: string) => Promise<ConnectApp[]>;
  /**
   * Every Connect session's application not ended, whoever's, read with the service's own rights:
   * with it (and an idle time), those no live endpoint holds are stopped once idle (orphan-sweep.ts).
   */
  connectServers?: () => Promise<ConnectApp[]>;
  /** The culling's and the orphan sweep's time (default: the process's). */
  clock?: Clock;
}

/** Spark's error class for a session of the service's last run: its server instance is gone (pyspark 4.x then starts a new session by itself). */
export const SESSION_CHANGED = 'INVALID_HANDLE.SESSION_CHANGED';

export class ConnectSessions {
  readonly sessions = new Map<string, ConnectSession>();
  private readonly ended = new Map<string, Ended>();
  private cullTimer: TimerHandle | undefined;
  private closed = false;
  private readonly clock: Clock;
  private readonly activity: ActivityBook;
  private readonly orphans: OrphanSweep | undefined;
  /** Servers started ahead (absent: no pool). */
  readonly pool: ConnectWarmPool | undefined;
  /**
   * The HTTP/2 connections to the sessions' servers, one per server: the relay's (endpoint.ts) and
   * the warm pool's warm-up's, so that a pooled server's first session finds one open.
   */
  readonly upstreams = new Upstreams();
  /** How a new session takes a server of the pool (absent: no pool). */
  private readonly handout: WarmHandout | undefined;

  constructor(private readonly options: SessionsOptions) {
    this.clock = options.clock ?? systemClock;
    this.activity = new ActivityBook(options.activity, options.idleMs, options.log);
    for (const { sessionId, owner, why } of options.ended ?? []) this.remember(sessionId, { owner, why, errorClass: SESSION_CHANGED });
    if (options.idleMs > 0) {
      this.cullTimer = this.clock.setInterval(() => void this.cull(), Math.max(250, Math.min(60_000, options.idleMs / 4)));
    }
    if (options.idleMs > 0 && options.connectServers) {
      this.orphans = new OrphanSweep({
        servers: options.connectServers, holds: (appName) => this.holds(appName), idleMs: options.idleMs, log: options.log, clock: this.clock,
        stop: (appName, why) => this.stopApp(appName, undefined, why),
      });
      this.orphans.open();
    }
    const { warm } = options;
    if (warm && [...warm.sizes.values()].some((n) => n > 0)) {
      const host = warmPoolHost({
        warm, placement: this.placement, defaultVersion: options.defaultVersion, serverJars: options.serverJars,
        stop: (appName, why) => this.stopApp(appName, undefined, why), stopping: () => this.closed, probeMs: options.probeMs, upstreams: this.upstreams,
      });
      this.pool = new ConnectWarmPool(warm.sizes, host, options.log, warm.checkMs);
      this.pool.open();
      this.handout = new WarmHandout({
        pool: this.pool, api: options.api, log: options.log, placement: this.placement, handedOut: warm.handedOut,
        stop: (appName, why) => this.stopApp(appName, undefined, why), upstreams: this.upstreams,
      });
    }
  }

  private get placement(): ServerPlacement { return this.options.placement ?? loopbackPlacement; }

  /** Whether application `appName` is this endpoint's: one of its sessions', its warm pool's, or one being handed out. */
  holds(appName: string): boolean {
    for (const session of this.sessions.values()) if (session.appName === appName) return true;
    return (this.handout?.has(appName) ?? false) || (this.pool?.appNames().includes(appName) ?? false);
  }

  private get adoption(): Adoption {
    const { api, sessionClaims, log, probeMs } = this.options;
    return {
      api, sessionClaims, placement: this.placement, log, probeMs, stopping: () => this.closed,
      remember: (sessionId, ended) => this.remember(sessionId, ended), touch: (session) => this.activity.share(session, true),
    };
  }

  /** The own token of application `appName`'s server, which the relay sends it (undefined: it has none). */
  serverToken(appName: string): string | undefined { return this.placement.token(appName); }

  private stopApp(appName: string, key: string | undefined, why: string): Promise<unknown> {
    return this.options.stopApp ? this.options.stopApp(appName, why) : this.options.api.stop(appName, key);
  }

  /** The caller's session, started if new; throws a GrpcRefusal (before any side effect) when it may not have it. */
  async acquire(caller: ConnectCaller, sessionId: string, template: string | undefined): Promise<ConnectSession> {
    const gone = this.ended.get(sessionId);
    if (gone) {
      throw sessionRefusal(caller, sessionId, { owner: gone.owner, template }, template)
        ?? new GrpcRefusal(GrpcStatus.FAILED_PRECONDITION, endedMessage(sessionId, gone.why), gone.errorClass);
    }
    let session = this.sessions.get(sessionId);
    if (session) {
      const refusal = sessionRefusal(caller, sessionId, session, template);
      if (refusal) throw refusal;
    } else {
      if (this.closed) throw new GrpcRefusal(GrpcStatus.UNAVAILABLE, 'the Spark Connect endpoint is shutting down');
      session = { sessionId, owner: caller.id, key: caller.key, template, openCalls: 0, lastActivity: this.clock.now(), ready: Promise.resolve() };
      session.ready = this.start(session);
      this.sessions.set(sessionId, session);
    }
    session.openCalls++;
    session.lastActivity = this.clock.now();
    try {
      await session.ready;
    } catch (error) {
      this.release(session);
      throw error;
    }
    return session;
  }

  /** A call of the session ended. */
  release(session: ConnectSession): void {
    session.openCalls = Math.max(0, session.openCalls - 1);
    session.lastActivity = this.clock.now();
    this.activity.share(session);
  }

  /** Submits the session's application and waits for its Connect server; a failed start forgets the session (no trace but the application, if one was made). */
  private async start(session: ConnectSession): Promise<void> {
    const { api, log } = this.options;
    const since = performance.now();
    try {
      const version = session.template ? (await api.template(session.template, session.key)).config.engineVersion ?? this.options.defaultVersion : this.options.defaultVersion;
      if (await adoptSession(session, this.adoption) || (this.handout && await this.handout.take(session, version, since))) return;
      session.port = await this.placement.port();
      const app = await api.submit(sessionSubmission({ sessionId: session.sessionId, template: session.template, version, port: session.port, jars: this.options.serverJars(version), bindAddress: this.placement.bindAddress }), session.key);
      session.appName = app.appName;
      log.info({ appName: app.appName, sessionId: session.sessionId, version }, 'Spark Connect session: application submitted');
      session.server = await waitForServer({
        appName: app.appName, port: session.port, placement: this.placement, get: (name) => api.get(name, session.key),
        stopping: () => this.closed, probeMs: this.options.probeMs, what: 'this Spark Connect session',
      });
    } catch (error) {
      this.sessions.delete(session.sessionId);
      if (session.appName) this.forget(session, 'its application did not start');
      throw error instanceof GrpcRefusal ? error : new GrpcRefusal(GrpcStatus.UNAVAILABLE, `could not start the Spark Connect session: ${(error as Error).message}`);
    }
  }

  /**
   * A call could not reach the session's server: whether its application ended (stopped,
   * deleted, failed). An ended one is forgotten, and later calls are told so.
   */
  async checkEnded(session: ConnectSession): Promise<string | undefined> {
    let app: ConnectApp | undefined;
    try {
      app = await this.options.api.get(session.appName!, session.key);
    } catch {
      return undefined;
    }
    if (!isEnded(app)) return undefined;
    const why = app ? `its application ${session.appName} is ${app.state}` : `its application ${session.appName} was deleted`;
    this.forget(session, why);
    return endedMessage(session.sessionId, why);
  }

  private forget(session: ConnectSession, why: string): void {
    this.sessions.delete(session.sessionId);
    this.remember(session.sessionId, { owner: session.owner, why });
  }

  private remember(sessionId: string, ended: Ended): void {
    this.ended.set(sessionId, ended);
    if (this.ended.size > ENDED_KEPT) this.ended.delete(this.ended.keys().next().value!);
  }

  /** Stops the session's application and forgets the session. */
  async end(session: ConnectSession, why: string): Promise<void> {
    this.forget(session, why);
    if (session.appName) await this.stopApp(session.appName, session.key, why);
  }

  /** Stops the sessions of a key that was revoked: nobody can reach them any more. */
  async endOwnedBy(owner: string, why: string): Promise<void> {
    const owned = [...this.sessions.values()].filter((session) => session.owner === owner);
    await Promise.allSettled(owned.map((session) => this.end(session, why)));
  }

  /**
   * Stops every session idle (no open call) for longer than the idle time. With shared activity
   * (Kubernetes mode), a session in a call here has its activity written, and an idle one's
   * application is read first: a later activity another replica wrote keeps it.
   */
  cull(now = this.clock.now()): Promise<void> {
    // The pool's servers are this endpoint's too: their activity says so to every replica's orphan sweep.
    if (this.pool) this.activity.keep(this.pool.appNames(), now);
    const culls: Promise<void>[] = [];
    for (const session of [...this.sessions.values()]) {
      if (session.openCalls > 0) {
        session.lastActivity = now;
        this.activity.share(session);
      }
      if (session.openCalls > 0 || !session.appName || now - session.lastActivity < this.options.idleMs) continue;
      culls.push(this.cullIdle(session, now).catch((error: Error) => this.options.log.warn({ err: error, appName: session.appName }, 'could not stop an idle Spark Connect session')));
    }
    return Promise.all(culls).then(() => undefined);
  }

  private async cullIdle(session: ConnectSession, now: number): Promise<void> {
    const { idleMs } = this.options;
    await this.activity.catchUp(session);
    if (now - session.lastActivity < idleMs || !this.sessions.has(session.sessionId) || session.openCalls > 0) return;
    this.options.log.info({ appName: session.appName, sessionId: session.sessionId }, 'Spark Connect session idle: stopping it');
    await this.end(session, `idle for more than ${Math.round(idleMs / 1000)} s`);
  }

  /** Stops every session (the endpoint is going away: no server is left behind). */
  async close(): Promise<void> {
    this.closed = true;
    if (this.cullTimer !== undefined) this.clock.clearInterval(this.cullTimer);
    await this.orphans?.close();
    await Promise.allSettled([...[...this.sessions.values()].map((session) => this.end(session, 'the service stopped')), this.pool?.close()]);
    this.upstreams.close();
  }
}
