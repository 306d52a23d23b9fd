// GET /notebooks/api/kernelspecs[/{name}] and the logos at /notebooks/kernelspecs/{name}/{file}:
// one kernel spec per config template that has a pythonVersion, plus `default` (no template).
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { packageRoot } from '../../lib/package-root.js';
import type { ApiClient, ApiTemplate } from '../api-client.js';
import { GatewayError } from '../kernel-registry.js';

const LOGOS: Record<string, string> = { 'logo-32x32.png': 'logo-32x32.png', 'logo-64x64.png': 'logo-64x64.png' };
const LOGO_DIR = join(packageRoot, 'gateway', 'logos');

function kernelspec(base: string, name: string, template: ApiTemplate | undefined) {
  const python = template?.config.pythonVersion ?? '3';
  const engine = template?.config.engineVersion;
  const displayName = python === '3'
    ? `Spark${engine ? ` ${engine}` : ''} - ${name}`
    : `${name} (Python ${python}: unsupported, Spark 3 runs Python 3 only)`;
  return {
    name,
    spec: {
      argv: [], display_name: displayName, language: 'python', interrupt_mode: 'message', env: {},
      metadata: { 'submission-service': { configTemplateName: template ? name : '', pythonVersion: python, supported: python === '3' } },
    },
    resources: Object.fromEntries(Object.keys(LOGOS).map((file) => [file.replace('.png', ''), `${base}/kernelspecs/${name}/${file}`])),
  };
}

const keyOf = (request: FastifyRequest) => request.gatewayKey;

export async function kernelspecRoutes(app: FastifyInstance, { api }: { api: ApiClient }) {
  const base = '/notebooks';
  const specs = async (request: FastifyRequest) => {
    const templates = (await api.templates(keyOf(request))).filter((t) => t.config.pythonVersion);
    return [kernelspec(base, 'default', undefined), ...templates.map((t) => kernelspec(base, t.name, t))];
  };

  app.get('/api/kernelspecs', async (request) => {
    const list = await specs(request);
    return { default: 'default', kernelspecs: Object.fromEntries(list.map((s) => [s.name, s])) };
  });

  app.get<{ Params: { name: string } }>('/api/kernelspecs/:name', async (request) => {
    const { name } = request.params;
    if (name === 'default') return kernelspec(base, 'default', undefined);
    const template = await api.template(name, keyOf(request));
    if (!template?.config.pythonVersion) throw new GatewayError(404, 'Not Found', `No such kernel spec: ${name}`);
    return kernelspec(base, name, template);
  });

  app.get<{ Params: { name: string; file: string } }>('/kernelspecs/:name/:file', async (request, reply) => {
    const file = LOGOS[request.params.file];
    if (!file) throw new GatewayError(404, 'Not Found', `No such resource: ${request.params.file}`);
    return reply.type('image/png').header('cache-control', 'max-age=3600').send(await readFile(join(LOGO_DIR, file)));
  });
}
