// The webhook process: watch-fed caches, certificates (issued, rotated, CA published in
// the MutatingWebhookConfiguration), and the HTTPS server running the pure admission.
import { AdmissionregistrationV1Api, type V1MutatingWebhookConfiguration } from '@kubernetes/client-node';
import { AdmissionCache } from '../cluster/kubernetes/admission-cache.js';
import type { KubeClients } from '../cluster/kubernetes/client.js';
import { newAppName } from '../cluster/app-name.js';
import { ensureCertificates } from '../certs/rotation.js';
import { fileCertificateStore } from '../certs/store.js';
import { type AdmissionRules, admitPod } from './domain/index.js';
import { mutatingWebhookConfiguration } from './server/registration.js';
import { startWebhookServer } from './server/server.js';

export interface WebhookServiceOptions {
  clients: KubeClients;
  rules: AdmissionRules;
  certDir: string;
  port: number;
  host: string;
  dnsNames: string[];
  ipAddresses?: string[];
  /** Keep this MutatingWebhookConfiguration registered with our CA. */
  registration?: { name: string; url?: string; service?: { namespace: string; name: string; port?: number } };
  /** How often the certificate is checked for renewal. */
  rotationCheckMs?: number;
}

/**
 * Keeps our CA in the MutatingWebhookConfiguration. One that exists (the Helm chart's) only
 * gets its caBundle patched, so its failurePolicy, timeouts and labels stay as deployed;
 * a missing one (the test bed) is created whole.
 */
async function register(clients: KubeClients, body: V1MutatingWebhookConfiguration): Promise<void> {
  const api = clients.kc.makeApiClient(AdmissionregistrationV1Api);
  const name = body.metadata!.name!;
  const caBundle = body.webhooks?.[0]?.clientConfig.caBundle;
  try {
    const current = await api.readMutatingWebhookConfiguration({ name });
    const patch = (current.webhooks ?? []).map((_w, i) => ({ op: 'add', path: `/webhooks/${i}/clientConfig/caBundle`, value: caBundle }));
    if (patch.length > 0) await api.patchMutatingWebhookConfiguration({ name, body: patch });
  } catch (error) {
    if ((error as { code?: number }).code !== 404) throw error;
    await api.createMutatingWebhookConfiguration({ body });
  }
}

export async function startWebhookService(options: WebhookServiceOptions) {
  const { rules } = options;
  const cache = new AdmissionCache(options.clients, rules.namespace);
  await cache.start();
  const store = fileCertificateStore(options.certDir);
  const publish = async (caBundle: string) => {
    if (!options.registration) return;
    const { name, url, service } = options.registration;
    await register(options.clients, mutatingWebhookConfiguration({ name, url, service, caBundle, namespaces: [rules.namespace] }) as V1MutatingWebhookConfiguration);
  };
  const policy = { dnsNames: options.dnsNames, ipAddresses: options.ipAddresses, publishCaBundle: publish };
  const first = await ensureCertificates(store, policy);
  const server = await startWebhookServer({
    port: options.port,
    host: options.host,
    certFile: store.paths.cert,
    keyFile: store.paths.key,
    ready: () => cache.ready,
    prepare: (review) => cache.prepare(review),
    admit: (pod) => admitPod(pod, {
      rules,
      templates: (name) => cache.templates.get(name),
      applications: (name) => cache.applications.get(name),
      newAppName,
    }),
  });
  await publish(first.caBundle);
  // Renewal writes new files; the server reloads them without a restart.
  const timer = setInterval(() => void ensureCertificates(store, policy).catch(() => undefined), options.rotationCheckMs ?? 3_600_000);
  timer.unref();
  return {
    url: server.url,
    caBundle: first.caBundle,
    cache,
    async close() {
      clearInterval(timer);
      await server.close();
      await cache.stop();
    },
  };
}
