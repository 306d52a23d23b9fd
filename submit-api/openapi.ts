// The OpenAPI 3.1 document, generated from the routes' schemas, at /api/openapi.json,
// and the interactive reference at /api/ (its assets are served by the service itself).
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';

export async function installOpenApi(app: FastifyInstance, version: string, authEnabled = true) {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Submission Service',
        version,
        description: 'Submit Apache Spark applications with one HTTP call; manage config templates. Send your key in `X-API-Key` when authentication is on.',
      },
      components: { securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' } } },
      // With auth off no key is needed, and the document says so (clients and fuzzers read it).
      security: authEnabled ? [{ apiKey: [] }] : [],
      tags: [{ name: 'apps', description: 'Applications' }, { name: 'config-templates', description: 'Config templates' }, { name: 'jobs', description: 'Jobs: what their past runs tell' }, { name: 'schedules', description: 'Schedules: submissions on a cron schedule' }],
    },
    transformObject: (documents) => completeResponses((documents as { openapiObject: OpenApiDocument }).openapiObject) as never,
    // Components are named after each schema's title (ApplicationConfig, ...), not def-N.
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => String(json.title ?? `def-${i}`) },
  });
  await app.register(swaggerUi, { routePrefix: '/api', staticCSP: true, uiConfig: { deepLinking: true, tryItOutEnabled: true, layout: 'BaseLayout' } });
  app.get('/api/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}

type Operation = { requestBody?: unknown; parameters?: { in: string }[]; responses?: Record<string, { description?: string; content?: Record<string, unknown> }> };
type OpenApiDocument = { paths?: Record<string, Record<string, Operation>> };

const errorResponse = (description: string) => ({ description, content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorBody' } } } });

/**
 * What the route schemas cannot say: answers given before a route runs (413 body too large,
 * 415 not JSON, 414 a path parameter over the router's limit, sent before authentication)
 * and the log's plain-text body.
 */
function completeResponses(doc: OpenApiDocument): OpenApiDocument {
  for (const [path, operations] of Object.entries(doc.paths ?? {})) {
    for (const operation of Object.values(operations)) {
      const responses = (operation.responses ??= {});
      if (operation.requestBody) {
        responses['413'] ??= errorResponse('The body is larger than the limit (1 MiB).');
        responses['415'] ??= errorResponse('The body is not application/json.');
      }
      if (path.includes('{')) responses['414'] ??= errorResponse('A path parameter is longer than 1024 characters (answered by the router, before authentication).');
      responses['405'] ??= errorResponse('The path exists but not with this method; `Allow` lists those it takes.');
      responses['431'] ??= { description: "The request line and headers are larger than Node's limit (16 KiB); answered before anything else, without a body." };
    }
  }
  const log = doc.paths?.['/api/apps/{appName}/log']?.get?.responses?.['200'];
  if (log) log.content = { 'text/plain': { schema: { type: 'string' } } };
  return doc;
}
