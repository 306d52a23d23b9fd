// Per-key limits, so that one key cannot take the service from the others: submissions per
// minute (429 with Retry-After), unfinished applications at once (429), and long-lived streams
// at once (event streams and followed logs; per address for requests without a key). Admin keys
// are not limited in submissions (the platform team's own tools); with authentication off there
// is one anonymous submitter and nobody to share with, so only the stream cap applies, per address.
// Streams of a key end the moment it is revoked. README "Limits" and docs/operations.md.
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AppRecord, Cluster } from '../cluster/cluster.js';
import type { TickAdmission, TickPermit } from '../cluster/schedules/runner.js';
import { ConnectionSlots, connectionOwner, keyOwner } from '../lib/connection-slots.js';
import { ActiveApplications } from './active-applications.js';
import type { KeyVerifier } from './auth/plugin.js';
import { HttpError } from './errors.js';
import type { FairShareLimits } from './fair-share-limits.js';

export { defaultFairShare, type FairShareLimits } from './fair-share-limits.js';

/** Whether a request's submissions are counted: a user key's (admins and auth off are not limited). */
const limited = (request: FastifyRequest) => request.apiKey !== null && request.apiKey.role !== 'admin';

export interface FairShare {
  /** Route config that applies the submission rate (the POST /api/apps/ route spreads it in). */
  readonly submissionRate: { rateLimit: object } | Record<string, never>;
  /** Counts a submission toward the key's unfinished applications; throws 429 when it holds its cap. */
  reserveApplication(request: FastifyRequest): (created?: AppRecord) => void;
  /**
   * A schedule's tick, as its owner key (cluster/schedules/runner.ts): refused as that key's HTTP
   * submission would be (a revoked key, its submissions per minute, its unfinished applications),
   * else counted like one.
   */
  readonly admitTick: TickAdmission;
  /** A slot for one long-lived stream of the request's owner, or a 429 thrown; call the result when it ends. */
  holdStream(request: FastifyRequest, close: () => void): () => void;
}

export async function installFairShare(app: FastifyInstance, options: {
  cluster: Cluster; limits: FairShareLimits; auth: { enabled: boolean; store: KeyVerifier };
}): Promise<FairShare> {
  const { limits } = options;
  await app.register(rateLimit, {
    global: false,
    // After authentication (onRequest) and validation: counted per key id, valid bodies only.
    hook: 'preHandler',
    keyGenerator: (request) => request.apiKey?.id ?? 'anonymous',
    allowList: (request) => !limited(request),
    errorResponseBuilder: (request, context) => new HttpError(429,
      `this key made the ${context.max} submissions a key may make per minute; retry in ${context.after} (Retry-After)`),
  });
  const active = limits.applicationsPerKey > 0 ? await ActiveApplications.follow(options.cluster) : undefined;
  const streams = new ConnectionSlots(limits.streamsPerKey);
  const stopFollowing = options.auth.enabled ? options.auth.store.onRevoked?.((keyId) => streams.closeOwner(keyOwner(keyId))) : undefined;
  app.addHook('onClose', async () => {
    active?.close();
    stopFollowing?.();
  });
  const reserveFor = (keyId: string) => {
    if (!active) return () => undefined;
    const count = active.count(keyId);
    if (count >= limits.applicationsPerKey) {
      throw new HttpError(429, `this key has ${count} unfinished applications (PENDING or RUNNING), the most one key may have at once: wait for one to end, or stop one`);
    }
    return active.reserve(keyId);
  };
  const tickRate = new PerMinute(limits.submissionsPerMinute);
  const admitTick = (ownerKeyId: string | null): TickPermit => {
    const free: TickPermit = { ok: true, done: () => undefined };
    if (!options.auth.enabled) return free; // one anonymous submitter, as over HTTP
    // Unknown (revoked) or no owner: what its HTTP submission would meet is 401.
    const owner = ownerKeyId === null ? undefined : options.auth.store.byId ? options.auth.store.byId(ownerKeyId) : { id: ownerKeyId, role: 'user' as const };
    if (!owner) return { ok: false, status: 401, message: `the schedule's owner key ${ownerKeyId ?? '(none)'} is revoked or unknown: its ticks submit nothing until the schedule is made again by a valid key` };
    if (owner.role === 'admin') return free;
    if (!tickRate.take(owner.id)) return { ok: false, status: 429, message: `the schedule's owner key made the ${limits.submissionsPerMinute} scheduled submissions a key may make per minute` };
    try {
      return { ok: true, done: reserveFor(owner.id) };
    } catch (error) {
      return { ok: false, status: (error as HttpError).statusCode, message: (error as Error).message };
    }
  };
  return {
    submissionRate: limits.submissionsPerMinute > 0 ? { rateLimit: { max: limits.submissionsPerMinute, timeWindow: 60_000 } } : {},
    reserveApplication: (request) => (active && limited(request) ? reserveFor(request.apiKey!.id) : () => undefined),
    admitTick,
    holdStream: (request, close) => {
      const owner = connectionOwner(request.apiKey?.id, request.ip);
      const release = streams.take(owner, close);
      if (!release) {
        const who = request.apiKey ? 'this key holds' : `address ${request.ip} holds`;
        throw new HttpError(429, `${who} ${limits.streamsPerKey} open event streams and followed logs, the most at once: close one first`);
      }
      return release;
    },
  };
}

/**
 * Scheduled submissions per key in the current minute (a fixed window, as the HTTP route's
 * limiter counts): a schedule ticking every second meets the same ceiling as a script would.
 * Counted apart from the key's HTTP submissions (the route's limiter keeps its own store).
 */
class PerMinute {
  private windowStart = 0;
  private readonly counts = new Map<string, number>();
  constructor(private readonly max: number, private readonly now: () => number = Date.now) {}

  take(keyId: string): boolean {
    if (this.max <= 0) return true;
    const now = this.now();
    if (now - this.windowStart >= 60_000) { this.windowStart = now; this.counts.clear(); }
    const used = this.counts.get(keyId) ?? 0;
    if (used >= this.max) return false;
    this.counts.set(keyId, used + 1);
    return true;
  }
}
