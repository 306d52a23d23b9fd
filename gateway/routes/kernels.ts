// /notebooks/api/kernels: start (answers as soon as the API accepted the application), list
// (with the exact fields jupyter_server parses), get, delete, interrupt, restart.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { GatewayError } from '../gateway-error.js';
import type { KernelRegistry } from '../kernel-registry.js';
import { parseAnyBodyAsJson } from './any-content-type.js';

// Any id is looked up: one that is not a kernel's (a UUID or not) is 404, as Kernel Gateway answers.
const idParams = { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] } as const;

/**
 * A request that says it carries JSON and carries nothing (`@jupyterlab/services` sends
 * `Content-Type: application/json` on every call, an interrupt's, a restart's and a DELETE's
 * included) is a request without a body, as Kernel Gateway reads it: fastify's JSON parser would
 * answer 400 "Body cannot be empty". Its Content-Type is dropped, so no parser runs.
 */
async function emptyBodyIsNoBody(request: FastifyRequest): Promise<void> {
  const headers = request.raw.headers;
  const empty = headers['transfer-encoding'] === undefined && (headers['content-length'] === undefined || headers['content-length'] === '0');
  if (empty && headers['content-type'] !== undefined) delete headers['content-type'];
}

export async function kernelRoutes(app: FastifyInstance, { registry }: { registry: KernelRegistry }) {
  parseAnyBodyAsJson(app);
  app.addHook('onRequest', emptyBodyIsNoBody);
  app.get('/api/kernels', async (request) => (await registry.list(request.gatewayCaller)).map((k) => k.model()));

  // Not part of Jupyter's protocol: what the warm pools hold (`--warm-pool`), for operators and the bench.
  app.get('/api/warm-pool', async () => ({ pools: registry.pool.status() }));

  app.post<{ Body: { name?: string; env?: Record<string, unknown> } | undefined }>('/api/kernels', {
    schema: {
      body: {
        type: ['object', 'null'],
        properties: { name: { type: 'string', maxLength: 63, pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$' }, env: { type: 'object' } },
      },
    },
  }, async (request, reply) => {
    const session = await registry.start(request.body?.name || 'default', request.gatewayKey, request.body?.env ?? {}, request.gatewayCaller);
    return reply.code(201).send(session.model());
  });

  app.get<{ Params: { id: string } }>('/api/kernels/:id', { schema: { params: idParams } }, async (request) => registry.get(request.params.id, request.gatewayCaller).model());

  app.delete<{ Params: { id: string } }>('/api/kernels/:id', { schema: { params: idParams } }, async (request, reply) => {
    await registry.remove(request.params.id, request.gatewayKey, request.gatewayCaller);
    return reply.code(204).send();
  });

  app.post<{ Params: { id: string } }>('/api/kernels/:id/interrupt', { schema: { params: idParams } }, async (request, reply) => {
    // 204 once the launcher confirmed it; an interrupt that could not reach the kernel is an error.
    await registry.get(request.params.id, request.gatewayCaller).interrupt();
    return reply.code(204).send();
  });

  app.post<{ Params: { id: string } }>('/api/kernels/:id/restart', { schema: { params: idParams } }, async (request) => {
    const session = registry.get(request.params.id, request.gatewayCaller);
    if (!await session.restart()) throw new GatewayError(404, 'Not Found', `Kernel ended while restarting: ${request.params.id}`);
    return session.model();
  });
}
