// A fastify plugin: GET /metrics, and the latency of every request by route pattern and
// status. The pattern (`/api/apps/:appName`), never the raw URL, so the number of series
// stays bounded whatever clients send; requests no route matched share one label.
// Used by the API (both modes) and meant for the gateway too.
import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import { LATENCY_BUCKETS, collectProcessMetrics, histogram, scrape } from './metrics.js';

export const httpRequestDuration = histogram({
  name: 'submission_service_http_request_duration_seconds',
  help: 'HTTP requests by method, route pattern and status code: time to the end of the response',
  labelNames: ['method', 'route', 'status_code'] as const,
  buckets: LATENCY_BUCKETS,
});

export interface HttpMetricsOptions {
  /** Where the exposition is served (default /metrics). No process label: Prometheus adds `job` and `instance`. */
  path?: string;
}

const UNMATCHED = 'unmatched';

const plugin: FastifyPluginAsync<HttpMetricsOptions> = async (app, options) => {
  collectProcessMetrics();
  const path = options.path ?? '/metrics';
  // reply.elapsedTime is fastify's own timer from the request's arrival: no per-request state here.
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? UNMATCHED;
    httpRequestDuration.observe({ method: request.method, route, status_code: String(reply.statusCode) }, reply.elapsedTime / 1000);
  });
  app.get(path, { schema: { hide: true }, logLevel: 'warn' }, async (_request, reply) => {
    const { contentType, body } = await scrape();
    return reply.type(contentType).send(body);
  });
};

/** Registered at the root (fastify-plugin), so its hook sees every route of the instance. */
export const httpMetricsPlugin = fp(plugin, { name: 'submission-service-http-metrics', fastify: '5.x' });
