// /api/config-templates/: a REST resource of reusable config fragments.
import type { FastifyInstance } from 'fastify';
import type { TemplateStore } from '../../cluster/cluster.js';
import { type ConfigTemplate, ref, schemaIds } from '../../schemas/index.js';
import { HttpError, notFound } from '../errors.js';

const errors = { 400: ref(schemaIds.error), 401: ref(schemaIds.error), 403: ref(schemaIds.error), 404: ref(schemaIds.error), 503: ref(schemaIds.error) };
const nameParams = {
  type: 'object', required: ['name'], additionalProperties: false,
  properties: { name: { type: 'string', maxLength: 63, pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$' } },
} as const;
const writer = { role: 'admin' } as const;

/** Templates may name any Spark version (SPEC's show 2.4.4): a real submission of one not offered is refused at admission. */
export async function configTemplateRoutes(app: FastifyInstance, { templates }: { templates: TemplateStore }) {
  app.post<{ Body: ConfigTemplate }>('/api/config-templates/', {
    config: writer,
    schema: { summary: 'Create a config template', tags: ['config-templates'], body: ref(schemaIds.configTemplate), response: { 201: ref(schemaIds.configTemplate), ...errors, 409: ref(schemaIds.error) } },
  }, async (request, reply) => {
    return reply.code(201).send(await templates.create(request.body));
  });

  app.get('/api/config-templates/', {
    schema: { summary: 'List config templates', tags: ['config-templates'], response: { 200: ref(schemaIds.configTemplateList), ...errors } },
  }, async () => ({ items: await templates.list() }));

  app.get<{ Params: { name: string } }>('/api/config-templates/:name', {
    schema: { summary: 'Read a config template', tags: ['config-templates'], params: nameParams, response: { 200: ref(schemaIds.configTemplate), ...errors } },
  }, async (request) => {
    const template = await templates.get(request.params.name);
    if (!template) throw notFound(`config template "${request.params.name}"`);
    return template;
  });

  app.put<{ Params: { name: string }; Body: ConfigTemplate }>('/api/config-templates/:name', {
    config: writer,
    schema: { summary: 'Replace a config template', tags: ['config-templates'], params: nameParams, body: ref(schemaIds.configTemplate), response: { 200: ref(schemaIds.configTemplate), ...errors } },
  }, async (request) => {
    if (request.body.name !== request.params.name) {
      throw new HttpError(400, `the body's name "${request.body.name}" differs from the path's "${request.params.name}"`, { field: 'name' });
    }
    return templates.replace(request.body);
  });

  app.delete<{ Params: { name: string } }>('/api/config-templates/:name', {
    config: writer,
    schema: { summary: 'Delete a config template', tags: ['config-templates'], params: nameParams, response: { 204: { type: 'null', description: 'Deleted' }, ...errors } },
  }, async (request, reply) => {
    if (!(await templates.delete(request.params.name))) throw notFound(`config template "${request.params.name}"`);
    return reply.code(204).send();
  });
}
