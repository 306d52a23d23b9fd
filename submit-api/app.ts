// The submission API: one fastify instance, declared schemas everywhere, one error
// handler, authentication as a plugin. Transport only: the work is in cluster/ and webhook/.
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { Cluster } from '../cluster/cluster.js';
import { authPlugin, type KeyVerifier, type SessionVerifier } from './auth/plugin.js';
import { installErrorHandler } from './errors.js';
import { installOpenApi } from './openapi.js';
import { appEventRoutes } from './routes/app-events.js';
import { appRoutes } from './routes/apps.js';
import { configTemplateRoutes } from './routes/config-templates.js';
import { installValidation } from './validation.js';

export interface ApiOptions {
  cluster: Cluster;
  auth: { enabled: boolean; store: KeyVerifier; sessionVerifier?: SessionVerifier };
  /** Honour X-Forwarded-Proto/-For (request.protocol, request.ip) only from a proxy in front: fastify's trustProxy. */
  trustProxy?: boolean | string | string[];
  logger?: FastifyServerOptions['logger'];
  bodyLimit?: number;
  version?: string;
}

export async function buildApi(options: ApiOptions): Promise<FastifyInstance> {
  const app = Fastify({
    logger: options.logger ?? false,
    bodyLimit: options.bodyLimit ?? 1024 * 1024,
    routerOptions: { ignoreTrailingSlash: true },
    trustProxy: options.trustProxy ?? false,
  });
  // Request bodies are JSON only: without this, fastify's built-in text/plain parser lets a
  // text body through to the schema (400 "must be object") instead of answering 415.
  app.removeContentTypeParser('text/plain');
  installValidation(app);
  installErrorHandler(app);
  await app.register(authPlugin, { enabled: options.auth.enabled, store: options.auth.store, sessionVerifier: options.auth.sessionVerifier });
  await installOpenApi(app, options.version ?? '0.1.0');
  await app.register(appRoutes, { cluster: options.cluster });
  await app.register(appEventRoutes, { cluster: options.cluster });
  await app.register(configTemplateRoutes, { templates: options.cluster.templates });
  // Followed logs must not hold a shutdown open. (fastify's forceCloseConnections option
  // would do it too, but tracks every socket and costs 40% of the throughput here.)
  app.addHook('preClose', async () => { app.server.closeAllConnections(); });
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok', cluster: options.cluster.kind }));
  return app;
}
