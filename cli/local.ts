// `submission-service local`: API + in-process admission + local Spark drivers.
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { LocalCluster } from '../cluster/local/local-cluster.js';
import { buildApi } from '../submit-api/app.js';
import { FileKeyStore } from '../submit-api/auth/key-store.js';
import { KERNEL_LABEL } from '../gateway/kernel-registry.js';
import { gatewayPlugin } from '../gateway/plugin.js';
import { dialable, gatewaySecret, localGatewayKey, localLauncherFile } from './gateway-wiring.js';
import { defaultDataDir, findSpark, javaProblem } from './config.js';
import { rulesFrom } from './rules.js';

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
      'cull-idle-seconds': { type: 'string', default: '0' },
    },
  });
  if (values.auth !== 'on' && values.auth !== 'off') throw new Error('--auth takes on or off');
  const dataDir = values['data-dir'];
  const rules = rulesFrom(values['node-pools'], 'local');
  // Kernels start at once beside batch applications instead of queueing for cores (gateway/README.md).
  const cluster = new LocalCluster({ dataDir, rules, cores: Number(values.cores), interactiveLabel: KERNEL_LABEL, ...findSpark() });
  const auth = { enabled: values.auth === 'on', store: new FileKeyStore(dataDir) };
  const api = await buildApi({ cluster, auth, logger: { level: process.env.LOG_LEVEL ?? 'info' } });
  // The notebook gateway on the same server, calling the API over HTTP like any client would.
  const self = () => dialable(values.host, api.server.address());
  await api.register(gatewayPlugin, {
    auth, apiUrl: () => `http://${self()}`, apiKey: auth.enabled ? localGatewayKey(dataDir, auth.store) : undefined,
    launcherUrl: () => `ws://${self()}/notebooks`, launcherFile: localLauncherFile(),
    secret: gatewaySecret(dataDir), cullIdleSeconds: Number(values['cull-idle-seconds']),
  });
  const java = javaProblem();
  if (java) api.log.warn(java);
  api.log.info({ dataDir, nodePools: rules.pools.map((p) => p.instanceName), cores: Number(values.cores) }, 'local mode');
  const address = await api.listen({ port: Number(values.port), host: values.host });
  process.stdout.write(`Submission Service (local mode) at ${address}/api/  notebooks at ${address}/notebooks  data in ${join(dataDir)}\n`);
  const shutdown = async () => {
    await api.close();
    await cluster.close();
    process.exit(0);
  };
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
  return -1; // keeps running
}
