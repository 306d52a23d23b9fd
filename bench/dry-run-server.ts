// The server side of bench/dry-run.ts, run as a child process so that autocannon (in the
// parent) and the server do not share one event loop. Prints `LISTENING <port>`.
//   api  - the real API: buildApi over a LocalCluster (logger off, auth off), with a template
//   bare - the ceiling: a bare fastify route that parses the same JSON body, returns a small JSON
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { readNodePools } from '../cli/config.js';
import { LocalCluster } from '../cluster/local/local-cluster.js';
import { buildApi } from '../submit-api/app.js';
import { buildRules } from '../domain/index.js';
import { TEMPLATE } from './fixtures.js';
import { NODE_POOLS } from './lib.js';

const mode = process.argv[2];
let app: FastifyInstance;
let cleanup = () => {};

if (mode === 'api') {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-dry-run-'));
  cleanup = () => rmSync(dataDir, { recursive: true, force: true });
  const file = readNodePools(NODE_POOLS);
  const rules = buildRules({ nodePools: file.nodePools, sizing: file.sizing, namespace: 'local' });
  const cluster = new LocalCluster({ dataDir, rules, cores: 2, sparkSubmit: 'spark-submit' });
  await cluster.templates.create(TEMPLATE);
  app = await buildApi({ cluster, auth: { enabled: false, store: { verify: () => undefined } }, logger: false });
} else if (mode === 'bare') {
  app = Fastify({ logger: false });
  app.post<{ Body: { jobName?: string } }>('/api/apps/', async (request) => ({ appName: `${request.body.jobName}-bare`, ok: true }));
} else {
  throw new Error('usage: dry-run-server.ts api|bare');
}

await app.listen({ host: '127.0.0.1', port: 0 });
const address = app.server.address();
process.stdout.write(`LISTENING ${typeof address === 'object' && address ? address.port : 0}\n`);

const shutdown = () => {
  app.close().then(() => { cleanup(); process.exit(0); }, (error: Error) => {
    process.stderr.write(`dry-run server: close failed: ${error.message}\n`);
    cleanup();
    process.exit(1);
  });
};
process.once('SIGTERM', shutdown);
process.once('SIGINT', shutdown);
