// The audit trail: every write under /api/ (submit, stop, delete, template create, replace,
// delete) leaves one log line with `audit: true`, the key id that made it (null with
// authentication off), what it named and how it ended, refused attempts included.
// Keys themselves never appear, only their ids.
import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';

declare module 'fastify' {
  interface FastifyRequest {
    /** What a write created that its URL does not name (a new application's name), for the audit line. */
    auditTarget: string | null;
  }
}

const WRITES = new Set(['POST', 'PUT', 'DELETE', 'PATCH']);

/** A template's name from a create's body (a replace or delete names it in the path). */
const bodyName = (body: unknown): string | undefined => {
  const name = (body as { name?: unknown } | null | undefined)?.name;
  return typeof name === 'string' ? name.slice(0, 253) : undefined;
};

const plugin: FastifyPluginAsync = async (app) => {
  app.decorateRequest('auditTarget', null);
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url;
    if (!WRITES.has(request.method) || !route?.startsWith('/api/')) return;
    request.log.info({
      audit: true,
      keyId: request.apiKey?.id ?? null,
      method: request.method,
      route,
      params: request.params,
      query: request.query,
      target: request.auditTarget ?? bodyName(request.body),
      statusCode: reply.statusCode,
    }, `audit ${request.method} ${route} ${reply.statusCode}`);
  });
};

export const auditPlugin = fp(plugin, { name: 'submission-service-audit', fastify: '5.x', dependencies: ['submission-service-auth'] });
