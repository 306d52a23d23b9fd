// /api/config-templates/: a REST resource of reusable config fragments.
import type { FastifyInstance } from 'fastify';
import type { TemplateStore } from '../../cluster/cluster.js';
import { type ConfigTemplate, ref, schemaIds } from '../../schemas/index.js';
import { engineVersionRefusal } from '../../domain/engine-versions.js';
import { HttpError, notFound } from '../errors.js';

const errors = { 400: ref(schemaIds.error), 401: ref(schemaIds.error), 403: ref(schemaIds.error), 404: ref(schemaIds.error), 503: ref(schemaIds.error) };
const nameParams = {
  type: 'object', required: ['name'], additionalProperties: false,
  properties: { name: { type: 'string', maxLength: 63, pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$' } },
} as const;
const writer = { role: 'admin' } as const;

/** A template naming a Spark version the installation does not offer would refuse every submission from it: refused now. */
function checkEngineVersion(template: ConfigTemplate, offered: readonly string[] | undefined): void {
  const version = template.config?.engineVersion;
  const refusal = version !== undefined && offered ? engineVersionRefusal(version, offered) : undefined;
  if (refusal) throw new HttpError(400, refusal.message, { field: `config.${refusal.field}` });
}

/** `engineVersions`: the offered Spark versions (domain/engine-versions.ts); undefined where this process does not admit (no rules). */
export async function configTemplateRoutes(app: FastifyInstance, { templates, engineVersions }: { templates: TemplateStore; engineVersions?: readonly string[] }) {
  app.post<{ Body: ConfigTemplate }>('/api/config-templates/', {
    config: writer,
    schema: { summary: 'Create a config template', tags: ['config-templates'], body: ref(schemaIds.configTemplate), response: { 201: ref(schemaIds.configTemplate), ...errors, 409: ref(schemaIds.error) } },
  }, async (request, reply) => {
    checkEngineVersion(request.body, engineVersions);
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
    checkEngineVersion(request.body, engineVersions);
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
