// `submission-service local`: API + in-process admission + local Spark drivers.
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { LocalCluster } from '../cluster/local/local-cluster.js';
import { loggerOptions } from '../lib/logger.js';
import { LOOPBACK_HOSTS } from '../submit-api/host-allowlist.js';
import { logSerializers } from '../submit-api/log-redaction.js';
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
      'allowed-hosts': { type: 'string', default: LOOPBACK_HOSTS.join(',') },
      'trust-proxy': { type: 'boolean', default: false },
    },
  });
  if (values.auth !== 'on' && values.auth !== 'off') throw new Error('--auth takes on or off');
  const dataDir = values['data-dir'];
  const rules = rulesFrom(values['node-pools'], 'local');
  // One logger for requests and for local mode's background work.
  const log = pino({ ...loggerOptions('local'), serializers: logSerializers });
  const cluster = new LocalCluster({ dataDir, rules, cores: Number(values.cores), log, ...findSpark() });
  const api = await buildService({
    cluster,
    auth: { enabled: values.auth === 'on', store: new FileKeyStore(dataDir) },
    loggerInstance: log,
    policy: rules.policy,
    // With auth off, only these Host names are served (DNS rebinding); `*` for any.
    allowedHosts: values['allowed-hosts'].split(',').map((h) => h.trim()).filter(Boolean),
    // The dashboard's session cookies: signed with <data-dir>/session-secret (created 0600 once).
    sessionSecret: loadSessionSecret(dataDir),
    trustProxy: values['trust-proxy'],
  });
  const java = javaProblem();
  if (java) api.log.warn(java);
  api.log.info({ dataDir, nodePools: rules.pools.map((p) => p.instanceName), cores: Number(values.cores) }, 'local mode');
  const address = await api.listen({ port: Number(values.port), host: values.host });
  process.stdout.write(`Submission Service (local mode) at ${address}/api/  data in ${join(dataDir)}\n`);
  // A signal ends the process either way; a failed close is said before it does.
  const shutdown = () => {
    api.close().then(() => cluster.close()).then(() => process.exit(0), (error: unknown) => {
      api.log.error({ err: error }, 'shutdown failed');
      process.exit(1);
    });
  };
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
  return -1; // keeps running
}
