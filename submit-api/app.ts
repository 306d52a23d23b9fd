// The submission API: one fastify instance, declared schemas everywhere, one error
// handler, authentication as a plugin. Transport only: the work is in cluster/ and webhook/.
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { Cluster } from '../cluster/cluster.js';
import type { SparkHistory } from '../cluster/history/spark-history.js';
import { httpMetricsPlugin } from '../lib/http-metrics.js';
import { installJsonBodyParser } from '../lib/json-body.js';
import { auditPlugin } from './audit.js';
import { authPlugin, type KeyVerifier, type SessionVerifier } from './auth/plugin.js';
import { HttpError, installErrorHandler } from './errors.js';
import { installOpenApi } from './openapi.js';
import { appEventRoutes } from './routes/app-events.js';
import { appRoutes } from './routes/apps.js';
import { jobRoutes } from './routes/jobs.js';
import type { JobProfiles } from '../cluster/job-profiles.js';
import { configTemplateRoutes } from './routes/config-templates.js';
import { scheduleRoutes } from './routes/schedules.js';
import type { ScheduleStore } from '../cluster/schedules/schedule-store.js';
import type { TickAdmission } from '../cluster/schedules/runner.js';
import { installValidation, unsafeField } from './validation.js';
import { installHostAllowlist } from './host-allowlist.js';
import { logSerializers } from './log-redaction.js';
import { trackMethods } from './method-not-allowed.js';
import { type ApiLimits, defaultLimits, installLimits, serverLimitOptions } from './limits.js';
import { defaultPolicy, type SubmissionPolicy } from '../domain/index.js';
import { defaultFairShare, type FairShareLimits, installFairShare } from './fair-share.js';

export interface ApiOptions {
  cluster: Cluster;
  /** Where ended runs' Spark UIs are kept (local mode's History Server); absent: none. */
  history?: SparkHistory;
  /** Jobs' profiles: each ended run's cost, sizing from past runs (local mode); absent: none kept. */
  jobs?: JobProfiles;
  auth: { enabled: boolean; store: KeyVerifier; sessionVerifier?: SessionVerifier };
  /** Honour X-Forwarded-Proto/-For (request.protocol, request.ip) only from a proxy in front: fastify's trustProxy. */
  trustProxy?: boolean | string | string[];
  logger?: FastifyServerOptions['logger'];
  /** A logger made by the caller (local mode shares it with its LocalCluster); wins over logger. */
  loggerInstance?: FastifyBaseLogger;
  bodyLimit?: number;
  /** Who may act on which application (domain/policy.ts); default: users on their own only. */
  policy?: SubmissionPolicy;
  /** Timeouts and caps (limits.ts); defaults suit a service on the open network. */
  limits?: Partial<ApiLimits>;
  /** Host names served while auth is off (DNS rebinding, host-allowlist.ts); undefined: any. */
  allowedHosts?: string[];
  /** Per-key limits: submissions per minute, applications and streams at once (fair-share.ts). */
  fairShare?: Partial<FairShareLimits>;
  version?: string;
  /** The notebook gateway's proof (lib/gateway-proof.ts): submissions with kernel labels need it; undefined: refused. */
  gatewayProof?: string;
  /** How long an Idempotency-Key answers with the application it made (idempotency.ts); default 24 h. */
  idempotencyWindowMs?: number;
  /** Where schedules are kept, and how the scheduler loop hears of a change (routes/schedules.ts); absent: no /api/schedules/. */
  schedules?: { store: ScheduleStore; changed?: () => void; admitTicksWith?: (admit: TickAdmission) => void };
}

export async function buildApi(options: ApiOptions): Promise<FastifyInstance> {
  const limits = { ...defaultLimits, ...options.limits };
  const app = Fastify({
    ...serverLimitOptions(limits),
    ...(options.loggerInstance
      ? { loggerInstance: options.loggerInstance }
      : { logger: typeof options.logger === 'object' ? { serializers: logSerializers, ...options.logger } : options.logger ?? false }),
    bodyLimit: options.bodyLimit ?? 1024 * 1024,
    // Path parameters are checked by the route schemas (400 after authentication); the router's
    // own limit (414, before authentication) is only for absurd lengths.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 1024 },
    // `__proto__` and `constructor` keys are parsed as data and then refused by name
    // (validation.ts), instead of the parser's "Body is not valid JSON".
    onProtoPoisoning: 'ignore',
    onConstructorPoisoning: 'ignore',
    trustProxy: options.trustProxy ?? false,
  });
  // Deep nesting is refused (400) before unsafeField or Ajv walk the body (lib/json-body.ts).
  installJsonBodyParser(app);
  app.addHook('preValidation', async (request) => {
    const unsafe = request.body === undefined ? undefined : unsafeField(request.body);
    if (unsafe) throw new HttpError(400, unsafe.message, { field: unsafe.field });
  });
  // Request bodies are JSON only: without this, fastify's built-in text/plain parser lets a
  // text body through to the schema (400 "must be object") instead of answering 415.
  app.removeContentTypeParser('text/plain');
  installValidation(app);
  installErrorHandler(app, trackMethods(app));
  if (!options.auth.enabled && options.allowedHosts) installHostAllowlist(app, options.allowedHosts);
  await installLimits(app, limits);
  // GET /metrics (open like /healthz: it names routes and counts, never data or keys).
  await app.register(httpMetricsPlugin);
  await app.register(authPlugin, { enabled: options.auth.enabled, store: options.auth.store, sessionVerifier: options.auth.sessionVerifier });
  await app.register(auditPlugin);
  await installOpenApi(app, options.version ?? '0.1.0', options.auth.enabled);
  const fairShare = await installFairShare(app, { cluster: options.cluster, auth: options.auth, limits: { ...defaultFairShare, ...options.fairShare } });
  await app.register(jobRoutes, { cluster: options.cluster, jobs: options.jobs, policy: options.policy ?? defaultPolicy });
  await app.register(appRoutes, { cluster: options.cluster, policy: options.policy ?? defaultPolicy, history: options.history, jobs: options.jobs, gatewayProof: options.gatewayProof, fairShare, idempotencyWindowMs: options.idempotencyWindowMs });
  await app.register(appEventRoutes, { cluster: options.cluster, history: options.history, fairShare });
  // Templates may name any version (SPEC's show 2.4.4): a real submission of one not offered is refused.
  await app.register(configTemplateRoutes, { templates: options.cluster.templates });
  // The scheduler loop submits as each schedule's owner key, within that key's limits (fair-share.ts).
  options.schedules?.admitTicksWith?.(fairShare.admitTick);
  if (options.schedules) await app.register(scheduleRoutes, { store: options.schedules.store, changed: options.schedules.changed, cluster: options.cluster, policy: options.policy ?? defaultPolicy });
  // Followed logs must not hold a shutdown open. (fastify's forceCloseConnections option
  // would do it too, but tracks every socket and costs 40% of the throughput here.)
  app.addHook('preClose', async () => { app.server.closeAllConnections(); });
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok', cluster: options.cluster.kind }));
  return app;
}
