// GET /notebooks/api: the server's version, as Kernel Gateway (and jupyter_server) answer `/api`,
// which their clients call to learn that a gateway is there and which one.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { packageRoot } from '../../lib/package-root.js';

const version = (JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { version: string }).version;

export async function versionRoutes(app: FastifyInstance) {
  app.get('/api', {
    schema: { response: { 200: { type: 'object', properties: { version: { type: 'string' } }, required: ['version'], additionalProperties: false } } },
  }, async () => ({ version }));
}
