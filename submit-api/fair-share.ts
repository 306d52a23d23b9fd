// Per-key limits, so that one key cannot take the service from the others: submissions per
// minute (429 with Retry-After), unfinished applications at once (429), and long-lived streams
// at once (event streams and followed logs; per address for requests without a key). Admin keys
// are not limited in submissions (the platform team's own tools); with authentication off there
// is one anonymous submitter and nobody to share with, so only the stream cap applies, per address.
// Streams of a key end the moment it is revoked. README "Limits" and docs/operations.md.
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AppRecord, Cluster } from '../cluster/cluster.js';
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
  return {
    submissionRate: limits.submissionsPerMinute > 0 ? { rateLimit: { max: limits.submissionsPerMinute, timeWindow: 60_000 } } : {},
    reserveApplication: (request) => {
      if (!active || !limited(request)) return () => undefined;
      const keyId = request.apiKey!.id;
      const count = active.count(keyId);
      if (count >= limits.applicationsPerKey) {
        throw new HttpError(429, `this key has ${count} unfinished applications (PENDING or RUNNING), the most one key may have at once: wait for one to end, or stop one`);
      }
      return active.reserve(keyId);
    },
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
