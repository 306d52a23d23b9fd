// `submission-service local`: API + in-process admission + local Spark drivers.
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { LocalCluster } from '../cluster/local/local-cluster.js';
import { loadSessionSecret } from '../dashboard/session-secret.js';
import { FileKeyStore } from '../submit-api/auth/key-store.js';
import { defaultDataDir, findSpark, javaProblem } from './config.js';
import { rulesFrom } from './rules.js';
import { buildService } from './service.js';

export async function localCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      port: { type: 'string', default: process.env.PORT ?? '8080' },
      host: { type: 'string', default: '127.0.0.1' },
      'data-dir': { type: 'string', default: defaultDataDir() },
      'node-pools': { type: 'string' },
      auth: { type: 'string', default: 'off' },
      cores: { type: 'string', default: String(availableParallelism()) },
      'trust-proxy': { type: 'boolean', default: false },
    },
  });
  if (values.auth !== 'on' && values.auth !== 'off') throw new Error('--auth takes on or off');
  const dataDir = values['data-dir'];
  const rules = rulesFrom(values['node-pools'], 'local');
  const cluster = new LocalCluster({ dataDir, rules, cores: Number(values.cores), ...findSpark() });
  const api = await buildService({
    cluster,
    auth: { enabled: values.auth === 'on', store: new FileKeyStore(dataDir) },
    // The dashboard's session cookies: signed with <data-dir>/session-secret (created 0600 once).
    sessionSecret: loadSessionSecret(dataDir),
    trustProxy: values['trust-proxy'],
    logger: { level: process.env.LOG_LEVEL ?? 'info' },
  });
  const java = javaProblem();
  if (java) api.log.warn(java);
  api.log.info({ dataDir, nodePools: rules.pools.map((p) => p.instanceName), cores: Number(values.cores) }, 'local mode');
  const address = await api.listen({ port: Number(values.port), host: values.host });
  process.stdout.write(`Submission Service (local mode) at ${address}/api/  data in ${join(dataDir)}\n`);
  const shutdown = async () => {
    await api.close();
    await cluster.close();
    process.exit(0);
  };
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
  return -1; // keeps running
}
