// /notebooks/api/kernels: start (answers as soon as the API accepted the application), list
// (with the exact fields jupyter_server parses), get, delete, interrupt, restart.
import type { FastifyInstance } from 'fastify';
import { GatewayError, type KernelRegistry } from '../kernel-registry.js';
import { parseAnyBodyAsJson } from './any-content-type.js';

// Any id is looked up: one that is not a kernel's (a UUID or not) is 404, as Kernel Gateway answers.
const idParams = { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] } as const;

export async function kernelRoutes(app: FastifyInstance, { registry }: { registry: KernelRegistry }) {
  parseAnyBodyAsJson(app);
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
    registry.get(request.params.id, request.gatewayCaller).interrupt();
    return reply.code(204).send();
  });

  app.post<{ Params: { id: string } }>('/api/kernels/:id/restart', { schema: { params: idParams } }, async (request) => {
    const session = registry.get(request.params.id, request.gatewayCaller);
    if (!await session.restart()) throw new GatewayError(404, 'Not Found', `Kernel ended while restarting: ${request.params.id}`);
    return session.model();
  });
}
