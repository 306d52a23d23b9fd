// The submission API: one fastify instance, declared schemas everywhere, one error
// handler, authentication as a plugin. Transport only: the work is in cluster/ and webhook/.
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { Cluster } from '../cluster/cluster.js';
import { dashboardPlugin } from '../dashboard/plugin.js';
import { httpMetricsPlugin } from '../lib/http-metrics.js';
import { auditPlugin } from './audit.js';
import { authPlugin } from './auth/plugin.js';
import { installErrorHandler } from './errors.js';
import { installOpenApi } from './openapi.js';
import { appEventRoutes } from './routes/app-events.js';
import { appRoutes } from './routes/apps.js';
import { configTemplateRoutes } from './routes/config-templates.js';
import { installValidation } from './validation.js';

export interface ApiOptions {
  cluster: Cluster;
  auth: { enabled: boolean; store: { verify(key: string): { id: string; role: 'user' | 'admin' } | undefined } };
  logger?: FastifyServerOptions['logger'];
  /** A pino logger to use as is (instead of options for one). */
  loggerInstance?: FastifyBaseLogger;
  bodyLimit?: number;
  version?: string;
}

export async function buildApi(options: ApiOptions): Promise<FastifyInstance> {
  const app = Fastify({
    ...(options.loggerInstance ? { loggerInstance: options.loggerInstance } : { logger: options.logger ?? false }),
    bodyLimit: options.bodyLimit ?? 1024 * 1024,
    routerOptions: { ignoreTrailingSlash: true },
  });
  // Request bodies are JSON only: without this, fastify's built-in text/plain parser lets a
  // text body through to the schema (400 "must be object") instead of answering 415.
  app.removeContentTypeParser('text/plain');
  installValidation(app);
  installErrorHandler(app);
  // GET /metrics (open like /healthz: it names routes and counts, never data or keys).
  await app.register(httpMetricsPlugin);
  await app.register(authPlugin, { enabled: options.auth.enabled, store: options.auth.store });
  await app.register(auditPlugin);
  await installOpenApi(app, options.version ?? '0.1.0');
  await app.register(appRoutes, { cluster: options.cluster });
  await app.register(appEventRoutes, { cluster: options.cluster });
  await app.register(configTemplateRoutes, { templates: options.cluster.templates });
  await app.register(dashboardPlugin, { auth: options.auth });
  // Followed logs must not hold a shutdown open. (fastify's forceCloseConnections option
  // would do it too, but tracks every socket and costs 40% of the throughput here.)
  app.addHook('preClose', async () => { app.server.closeAllConnections(); });
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok', cluster: options.cluster.kind }));
  return app;
}
