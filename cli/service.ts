// The composition root of one API process: the submission API (submit-api/) with the dashboard
// registered on top, sharing one session verifier. Local mode, `api` and `testbed up` all build
// their process here, so submit-api never needs to know the dashboard exists.
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { Sessions, type KeyLookup } from '../dashboard/session.js';
import { dashboardPlugin } from '../dashboard/plugin.js';
import type { SparkUiLimits } from '../dashboard/spark-ui-limits.js';
import type { SparkStaticSource } from '../dashboard/spark-ui-proxy.js';
import { buildApi, type ApiOptions } from '../submit-api/app.js';
import type { KeyVerifier } from '../submit-api/auth/plugin.js';

export interface ServiceOptions extends Omit<ApiOptions, 'auth'> {
  auth: { enabled: boolean; store: KeyVerifier & KeyLookup };
  /** HMAC secret of the dashboard's session cookies (dashboard/session-secret.ts); shared by all replicas. */
  sessionSecret: Buffer;
  sessionTtlMs?: number;
  /** Proxied Spark UIs on a host of their own (dashboard/spark-ui-access.ts); absent: sandboxed on this one. */
  sparkUiHost?: string;
  /** Proxied Spark UI requests per key, an answer's time and bytes (dashboard/spark-ui-limits.ts). */
  sparkUiLimits?: Partial<SparkUiLimits>;
  /** Spark's own static files for cookieless requests (local mode: its Spark's, cluster/local/spark-static.ts). */
  sparkStatic?: SparkStaticSource;
}

export async function buildService(options: ServiceOptions): Promise<FastifyInstance> {
  const { sessionSecret, sessionTtlMs, sparkUiHost, sparkUiLimits, sparkStatic, ...api } = options;
  const sessions = new Sessions({ secret: sessionSecret, store: options.auth.store, ttlMs: sessionTtlMs });
  const app = await buildApi({
    ...api,
    auth: { ...options.auth, sessionVerifier: options.auth.enabled ? sessions.verify : undefined },
  });
  await app.register(dashboardPlugin, { auth: options.auth, sessions, cluster: options.cluster, history: options.history, policy: options.policy, sparkUiHost, sparkUiLimits, sparkStatic });
  return app;
}

/** SIGINT or SIGTERM runs `close` once, then exits 0; a failed close is said (exit 1) before the process ends either way. */
export function exitOnSignals(log: FastifyBaseLogger, close: () => Promise<void>): void {
  const shutdown = () => {
    close().then(() => process.exit(0), (error: unknown) => {
      log.error({ err: error }, 'shutdown failed');
      process.exit(1);
    });
  };
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
}
