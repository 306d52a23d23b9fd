// `submission-service api` and `submission-service webhook`: the processes of a cluster deployment.
import { parseArgs } from 'node:util';
import { kubeClients } from '../cluster/kubernetes/client.js';
import { KubernetesCluster } from '../cluster/kubernetes/kubernetes-cluster.js';
import { loadSessionSecret } from '../dashboard/session-secret.js';
import { FileKeyStore } from '../submit-api/auth/key-store.js';
import { SecretKeyStore } from '../submit-api/auth/secret-key-store.js';
import { startWebhookService } from '../webhook/service.js';
import { defaultDataDir, parseSecretRef } from './config.js';
import { rulesFrom } from './rules.js';
import { buildService } from './service.js';

const common = {
  kubeconfig: { type: 'string' },
  namespace: { type: 'string', default: process.env.APPLICATIONS_NAMESPACE ?? 'spark-apps' },
  port: { type: 'string' },
  host: { type: 'string', default: '0.0.0.0' },
} as const;

function onSignal(close: () => Promise<void>) {
  const stop = () => void close().finally(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

export async function apiCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      ...common,
      auth: { type: 'string', default: 'on' },
      'data-dir': { type: 'string', default: defaultDataDir() },
      'trust-proxy': { type: 'boolean', default: false, description: 'honour X-Forwarded-Proto/-For from the proxy in front (an ingress): Secure cookies behind TLS' },
      'keys-secret': { type: 'string', description: 'NAMESPACE/NAME of the Secret whose keys.json holds the API keys (watched; instead of <data-dir>/keys.json)' },
    },
  });
  if (values.auth !== 'on' && values.auth !== 'off') throw new Error('--auth takes on or off');
  const clients = kubeClients(values.kubeconfig);
  // --keys-secret: keys verified against a watched copy of the Secret, so a revocation counts
  // within the watch's latency on every replica (submit-api/auth/secret-key-store.ts).
  const keysSecret = values['keys-secret'] === undefined ? undefined : parseSecretRef(values['keys-secret'], '--keys-secret');
  const secretStore = keysSecret && values.auth === 'on'
    ? new SecretKeyStore({ kc: clients.kc, core: clients.core, ...keysSecret, log: (message) => void process.stderr.write(`${message}\n`) })
    : undefined;
  // Listed before the port opens: a replica is never ready with an empty copy of the keys.
  await secretStore?.start();
  const cluster = new KubernetesCluster({ clients, namespace: values.namespace });
  const fileStore = secretStore ? undefined : new FileKeyStore(values['data-dir']);
  const store = secretStore ?? fileStore!;
  // Session cookies must verify on every replica: the chart gives all of them the same secret
  // (SUBMISSION_SERVICE_SESSION_SECRET from the auth Secret); without it, <data-dir>/session-secret.
  const api = await buildService({
    cluster, auth: { enabled: values.auth === 'on', store }, sessionSecret: loadSessionSecret(values['data-dir']),
    trustProxy: values['trust-proxy'], logger: { level: process.env.LOG_LEVEL ?? 'info' },
  });
  const address = await api.listen({ port: Number(values.port ?? 8080), host: values.host });
  const keysFrom = values.auth !== 'on' ? '' : secretStore ? `, API keys from Secret ${secretStore.ref}` : `, API keys from ${fileStore!.path}`;
  process.stdout.write(`Submission Service API (Kubernetes mode, namespace ${values.namespace}${keysFrom}) at ${address}/api/\n`);
  onSignal(async () => { await api.close(); await secretStore?.stop(); await cluster.close(); });
  return -1;
}

export async function webhookCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      ...common,
      'node-pools': { type: 'string' },
      placement: { type: 'string' },
      'cert-dir': { type: 'string', default: '/var/run/submission-service/certs' },
      'dns-name': { type: 'string', multiple: true, default: [] },
      register: { type: 'string', description: 'name of the MutatingWebhookConfiguration to keep registered' },
      'service-name': { type: 'string' },
      'service-namespace': { type: 'string' },
      url: { type: 'string' },
      'cert-secret': { type: 'string', description: 'NAMESPACE/NAME of the Secret that keeps the CA and serving certificate for every replica' },
    },
  });
  const clients = kubeClients(values.kubeconfig);
  const rules = rulesFrom(values['node-pools'], values.namespace, values.placement);
  const service = values['service-name'] && values['service-namespace']
    ? { name: values['service-name'], namespace: values['service-namespace'] } : undefined;
  // --cert-secret NAMESPACE/NAME: certificates shared by all replicas (webhook/service.ts).
  const certSecret = values['cert-secret'] === undefined ? undefined : parseSecretRef(values['cert-secret'], '--cert-secret');
  const dnsNames = [...values['dns-name'], ...(service ? [`${service.name}.${service.namespace}.svc`, `${service.name}.${service.namespace}.svc.cluster.local`] : [])];
  const webhook = await startWebhookService({
    clients, rules, certDir: values['cert-dir'], port: Number(values.port ?? 9443), host: values.host,
    dnsNames: dnsNames.length ? dnsNames : ['localhost'], ipAddresses: ['127.0.0.1'],
    registration: values.register ? { name: values.register, url: values.url, service } : undefined,
    certSecret,
  });
  process.stdout.write(`Submission Service webhook at ${webhook.url}\n`);
  onSignal(() => webhook.close());
  return -1;
}
