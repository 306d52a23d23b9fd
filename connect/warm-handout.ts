// How a new session gets a ready server of the warm pool (connect/sessions.ts asks, before it
// would start one cold): the gates a submission of the caller's meets come first (a dry run as
// its key), then the claim makes the server the caller's application. Meanwhile the server is
// neither the pool's nor the session's: this keeps it the endpoint's (the orphan sweep asks).
import { performance } from 'node:perf_hooks';
import type { FastifyBaseLogger } from 'fastify';
import { LOOPBACK_HOSTS } from '../submit-api/host-allowlist.js';
import { GrpcRefusal, GrpcStatus } from './grpc-status.js';
import { listening, type ServerPlacement } from './placement.js';
import { sessionSubmission } from './server-app.js';
import type { ServiceApi } from './service-api.js';
import type { Upstreams } from './relay.js';
import type { ConnectSession } from './session.js';
import type { WarmOptions } from './warm-host.js';
import type { ConnectWarmPool, WarmServer } from './warm-pool.js';

/** The claim's refusals that come before anything is recorded (key, proof, the key's cap): the server stays unclaimed. */
const REFUSED_BEFORE_CLAIM = new Set<number>([GrpcStatus.UNAUTHENTICATED, GrpcStatus.PERMISSION_DENIED, GrpcStatus.RESOURCE_EXHAUSTED]);

export interface WarmHandoutOptions {
  pool: ConnectWarmPool;
  api: ServiceApi;
  log: FastifyBaseLogger;
  placement: ServerPlacement;
  /** Names the session a handed-out server now runs in its record (WarmOptions.handedOut). */
  handedOut: WarmOptions['handedOut'];
  /** Stops an application without a key. */
  stop: (appName: string, why: string) => Promise<unknown>;
  /** The relay's connections: a server whose connection (its warm-up's) is up needs no probe. */
  upstreams?: Upstreams;
}

export class WarmHandout {
  /** Warm servers taken from the pool and not yet their session's (its dry run and claim): neither holds them meanwhile. */
  private readonly handingOut = new Set<string>();

  constructor(private readonly options: WarmHandoutOptions) {}

  /** Whether the server of `appName` is being handed out now. */
  has(appName: string): boolean { return this.handingOut.has(appName); }

  /**
   * Gives the session a ready server of the warm pool, if there is one for its template and
   * version, after the gates a submission of the caller's meets (a dry run as its key: key,
   * template, policy, submissions per minute); the claim then makes it the caller's application
   * (its submitter; counted toward its unfinished applications, 429 at its cap). A server whose
   * claim was refused before it was recorded goes back to the pool; one in doubt is stopped.
   * `since`: when the session's first call came (performance.now()), for the log's timings.
   */
  async take(session: ConnectSession, version: string, since = performance.now()): Promise<boolean> {
    const { pool } = this.options;
    const steps = new Steps(since);
    steps.mark('before');
    let warm: WarmServer | undefined;
    while ((warm = pool.take(session.template, version)) && !(await this.answers(warm))) void this.stopQuietly(warm.appName);
    steps.mark('probe');
    if (!warm) return false;
    const taken = warm;
    this.handingOut.add(taken.appName);
    return this.handOut(taken, session, version, steps).finally(() => this.handingOut.delete(taken.appName));
  }

  /**
   * Whether a taken server still answers: on this machine, its connection (the warm-up's) is up —
   * the kernel closes a dead process's sockets at once, so no probe to wait for (13 ms at load 20)
   * — or else it accepts a new connection. A pod's connection can outlive its node unseen: probed.
   */
  private answers(warm: WarmServer): Promise<boolean> | boolean {
    return (LOOPBACK_HOSTS.includes(warm.server.host) && this.options.upstreams?.isOpen(warm.server)) || listening(warm.server, 1000);
  }

  private async handOut(warm: WarmServer, session: ConnectSession, version: string, steps: Steps): Promise<boolean> {
    const { api, pool, placement } = this.options;
    try {
      await api.submit(sessionSubmission({ sessionId: session.sessionId, template: session.template, version, port: warm.port, bindAddress: placement.bindAddress }), session.key, { dryRun: true });
    } catch (error) {
      pool.giveBack(warm); // a dry run keeps nothing: the server is nobody's yet
      throw error;
    }
    steps.mark('dryRun');
    try {
      if (session.owner !== null) await api.claim(warm.appName, session.key);
    } catch (error) {
      if (error instanceof GrpcRefusal && REFUSED_BEFORE_CLAIM.has(error.code)) {
        pool.giveBack(warm);
        throw error;
      }
      void this.stopQuietly(warm.appName); // in doubt whether the claim was recorded: nobody else gets it
      this.options.log.warn({ err: error, appName: warm.appName }, 'Spark Connect warm pool: could not hand a server out; starting the session cold');
      return false;
    }
    steps.mark('claim');
    Object.assign(session, { appName: warm.appName, port: warm.port, server: warm.server, warm: true });
    // Not waited for: the record's label is for a restarted service (last-run.ts), and its write
    // (a record, fsynced) took 30 ms at load 20 before the session's first call could be relayed.
    void this.options.handedOut?.(warm.appName, session.sessionId)
      .catch((error: Error) => this.options.log.warn({ err: error, appName: warm.appName }, 'Spark Connect warm pool: could not label a server with its session'));
    this.options.log.info({ appName: warm.appName, sessionId: session.sessionId, version, owner: session.owner, ms: steps.spent() }, 'Spark Connect session: a server from the warm pool');
    return true;
  }

  private stopQuietly(appName: string): Promise<void> {
    return this.options.stop(appName, 'the Spark Connect endpoint could not hand this warm pool server out').then(() => undefined, (error: Error) => this.options.log.warn({ err: error, appName }, 'could not stop a Spark Connect server'));
  }
}

/**
 * How long the endpoint's own steps of a handout took (ms), for its log line: `before` is what
 * came before the handout (the template's read, the adoption check), `total` since the first call.
 */
class Steps {
  private readonly spentMs: Record<string, number> = {};
  private last: number;

  constructor(private readonly since: number) { this.last = since; }

  mark(step: string): void {
    const now = performance.now();
    this.spentMs[step] = Math.round((now - this.last) * 10) / 10;
    this.last = now;
  }

  spent(): Record<string, number> { return { ...this.spentMs, total: Math.round((this.last - this.since) * 10) / 10 }; }
}
