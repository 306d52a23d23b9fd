// The OpenAPI 3.1 document, generated from the routes' schemas, at /api/openapi.json,
// and the interactive reference at /api/ (its assets are served by the service itself).
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';

export async function installOpenApi(app: FastifyInstance, version: string) {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Submission Service',
        version,
        description: 'Submit Apache Spark applications with one HTTP call; manage config templates. Send your key in `X-API-Key` when authentication is on.',
      },
      components: { securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' } } },
      security: [{ apiKey: [] }],
      tags: [{ name: 'apps', description: 'Applications' }, { name: 'config-templates', description: 'Config templates' }],
    },
    // Components are named after each schema's title (ApplicationConfig, ...), not def-N.
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => String(json.title ?? `def-${i}`) },
  });
  await app.register(swaggerUi, { routePrefix: '/api', staticCSP: true, uiConfig: { deepLinking: true, tryItOutEnabled: true, layout: 'BaseLayout' } });
  app.get('/api/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
