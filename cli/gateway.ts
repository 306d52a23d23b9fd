// `submission-service gateway --api-url URL`: the notebook gateway alone (the chart's
// notebook-service). Kernels are applications it submits through the API at URL.
import { parseArgs } from 'node:util';
import Fastify from 'fastify';
import { gatewayPlugin } from '../gateway/plugin.js';
import { holdConnectionsBelowFdLimit } from '../lib/fd-limit.js';
import { installJsonBodyParser } from '../lib/json-body.js';
import { FileKeyStore } from '../submit-api/auth/key-store.js';
import { defaultDataDir, listFlag, parseSecretRef } from './config.js';
import { dialable, gatewaySecret, kernelsPerKeyFlag, lifecycleFlags, localLauncherFile, ownKeyVerifier, parseKernelsPerKey, parseLifecycle, parseWarmPool } from './gateway-wiring.js';
import { gatewayProof } from '../lib/gateway-proof.js';
import { fairShareFrom } from './fair-share-flags.js';

/** The command's flags (the chart's gateway.yaml passes these; a test holds them together). */
export const gatewayFlags = {
  'api-url': { type: 'string' },
  port: { type: 'string', default: process.env.PORT ?? '8888' },
  host: { type: 'string', default: '0.0.0.0' },
  auth: { type: 'string', default: 'on' },
  'data-dir': { type: 'string', default: defaultDataDir() },
  'launcher-url': { type: 'string' },
  'launcher-file': { type: 'string' },
  'cull-idle-seconds': { type: 'string', default: '0' },
  'keys-secret': { type: 'string' },
  kubeconfig: { type: 'string' },
  'kernel-image': { type: 'string' },
  'warm-pool': { type: 'string', multiple: true },
  'kernels-per-key': kernelsPerKeyFlag,
  ...lifecycleFlags,
  'websockets-per-key': { type: 'string' },
  'allowed-origins': { type: 'string', default: '' },
} as const;

export async function gatewayCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: gatewayFlags });
  if (!values['api-url']) throw new Error('--api-url URL is required (the API the kernels are submitted to)');
  if (values.auth !== 'on' && values.auth !== 'off') throw new Error('--auth takes on or off');
  const apiUrl = values['api-url'];
  const warmPool = parseWarmPool(values['warm-pool']);
  const secret = gatewaySecret(values['data-dir']);
  const apiKey = process.env.SUBMISSION_SERVICE_API_KEY;
  // The same key store as the API's: the Secret (--keys-secret, watched) or DIR/keys.json.
  const keysSecret = values['keys-secret'] === undefined ? undefined : parseSecretRef(values['keys-secret'], '--keys-secret');
  let secretStore: { start(): Promise<void>; stop(): Promise<void>; verify: FileKeyStore['verify']; onRevoked: FileKeyStore['onRevoked'] } | undefined;
  if (keysSecret && values.auth === 'on') {
    const { kubeClients } = await import('../cluster/kubernetes/client.js');
    const { SecretKeyStore } = await import('../submit-api/auth/secret-key-store.js');
    const clients = kubeClients(values.kubeconfig);
    secretStore = new SecretKeyStore({ kc: clients.kc, core: clients.core, ...keysSecret, log: (message) => void process.stderr.write(`${message}\n`) });
    await secretStore.start();
  }
  // Without --keys-secret (the chart's way: the gateway has no Kubernetes credentials) it accepts
  // its own key, which the notebook server is given as auth_token, and the keys of DIR/keys.json.
  const files = new FileKeyStore(values['data-dir']);
  const own = apiKey ? ownKeyVerifier(apiKey) : undefined;
  const store = secretStore ?? { verify: (key: string) => own?.(key) ?? files.verify(key), onRevoked: files.onRevoked.bind(files) };
  const auth = { enabled: values.auth === 'on', store };
  const app = Fastify({ logger: { level: process.env.LOG_LEVEL ?? 'info' }, routerOptions: { ignoreTrailingSlash: true } });
  app.addHook('preClose', async () => { app.server.closeAllConnections(); });
  installJsonBodyParser(app);
  holdConnectionsBelowFdLimit(app.server, app.log);
  const self = () => dialable(values.host, app.server.address());
  await app.register(gatewayPlugin, {
    auth, apiUrl, apiKey,
    launcherUrl: () => values['launcher-url'] ?? `ws://${self()}/notebooks`,
    launcherFile: values['launcher-file'] ?? localLauncherFile(),
    kernelImage: values['kernel-image'],
    secret, cullIdleSeconds: Number(values['cull-idle-seconds']), warmPool,
    kernelsPerKey: parseKernelsPerKey(values['kernels-per-key']),
    lifecycle: parseLifecycle(values),
    // The API accepts kernel labels with this (it has the same SUBMISSION_SERVICE_GATEWAY_SECRET).
    apiProof: gatewayProof(secret),
    websocketsPerKey: fairShareFrom({ 'websockets-per-key': values['websockets-per-key'] }).websocketsPerKey,
    upgrades: { allowedOrigins: listFlag(values['allowed-origins']) },
  });
  app.get('/healthz', async () => ({ status: 'ok' }));
  const address = await app.listen({ port: Number(values.port), host: values.host });
  process.stdout.write(`Notebook gateway at ${address}/notebooks (API ${apiUrl})\n`);
  const shutdown = async () => {
    await app.close();
    await secretStore?.stop();
    process.exit(0);
  };
  const stop = () => void shutdown().catch((error: Error) => {
    process.stderr.write(`gateway: shutdown failed: ${error.message}\n`);
    process.exit(1);
  });
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return -1;
}
