// Spark's real cluster mode for a test or a bench: the test bed with a real node
// (helpers/real-node.ts), the Spark runtime image built by images/build.sh (cached) and
// imported into the node's containerd, and on top what the service needs in a cluster: the
// namespace and CRDs, the drivers' service account and Role (as the chart gives them), the
// webhook registered with its CA, and the API with the dashboard in Kubernetes mode (its
// controller included, the webhook's rules and its own identity, as the chart runs it).
// The node is one node pool: it is labelled as such, and the pool's schedulable maxima
// leave room for a driver and two executors on this machine's two cores.
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { CoreV1Api } from '@kubernetes/client-node';
import type { NodePool } from '../../schemas/index.js';
import { ensureDriverAccount } from '../../cluster/kubernetes/bootstrap.js';
import { kubeClients, type KubeClients } from '../../cluster/kubernetes/client.js';
import { ensureDriverService } from '../../cluster/kubernetes/driver-service.js';
import { buildService } from '../../cli/service.js';
import { startWebhookService } from '../../cli/webhook-service.js';
import { KubernetesCluster } from '../../cluster/kubernetes/kubernetes-cluster.js';
import { freePort } from '../../lib/free-port.js';
import { ensureApiIdentity } from '../../testbed/api-identity.js';
import { NODE_NAME } from '../../testbed/real-node.js';
import { type AdmissionRules, buildRules, DEFAULT_DRIVER_SERVICE } from '../../domain/index.js';
import { repoRoot } from './api.js';
import { bootstrap, httpCall, type ApiInstance, type Reply } from './kubernetes.js';
import { type RealNodeBed, realNodeUnavailable, startRealNodeBed } from './real-node.js';

interface TestLike { teardown(fn: () => unknown): void }

/** The image images/build.sh names the Spark runtime (test/images/images.test.ts checks it). */
export const SPARK_RUNTIME_IMAGE = 'localhost/submission-service/spark:3.5.7';
export const PI_PY = 'local:///opt/spark/examples/src/main/python/pi.py';
const NAMESPACE = 'spark-apps';

/** This machine as one pool: 2 cores; maxima so that a driver and two executors fit together. */
export const NODE_POOL: NodePool = {
  cloudProvider: 'testbed', instanceName: NODE_NAME, cpu: 2, memoryMib: 8192, preemptible: false,
  maximumSchedulableCoreRequest: 1.2, maximumSchedulableMemoryRequestMib: 2048,
};

/** Why Spark cannot run on a real node here, or undefined. */
export function sparkNodeUnavailable(): string | undefined {
  const node = realNodeUnavailable();
  if (node) return node;
  const missing = ['mmdebstrap', 'buildah'].filter((tool) => spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0);
  return missing.length ? `the Spark runtime image needs ${missing.join(', ')} (apt-get install mmdebstrap buildah)` : undefined;
}

/** The Spark runtime image's OCI archive (built once, then cached by images/build.sh). */
export function sparkRuntimeArchive(): string {
  const out = execFileSync('bash', [join(repoRoot, 'images', 'build.sh')],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, IMAGES_ONLY: 'spark-runtime' }, timeout: 80 * 60_000 });
  const line = out.trim().split('\n').find((l) => l.startsWith('spark-runtime '));
  if (!line) throw new Error(`images/build.sh named no spark-runtime archive: ${out}`);
  return line.split(' ')[1];
}

/** The node is the pool's one node, as a platform team labels its nodes (README, "Placement"). */
export async function labelPoolNode(core: CoreV1Api, instanceTypeLabel: string): Promise<void> {
  for (let attempt = 0; ; attempt++) { // the kubelet writes its Node meanwhile: retry on a conflict
    const node = await core.readNode({ name: NODE_NAME });
    node.metadata!.labels = { ...node.metadata!.labels, [instanceTypeLabel]: NODE_POOL.instanceName };
    try {
      await core.replaceNode({ name: NODE_NAME, body: node });
      return;
    } catch (error) {
      if ((error as { code?: number }).code !== 409 || attempt >= 10) throw error;
    }
  }
}

export interface SparkNodeBed extends RealNodeBed {
  namespace: string;
  rules: AdmissionRules;
  clients: KubeClients;
  api: ApiInstance;
  call(method: string, path: string, body?: unknown, timeoutMs?: number): Promise<Reply>;
}

export async function startSparkNodeBed(t: TestLike): Promise<SparkNodeBed> {
  const archive = sparkRuntimeArchive(); // before the node: a cold build takes long
  const bed = await startRealNodeBed(t);
  await bed.node.importImage(archive);
  const rules = buildRules({ nodePools: [NODE_POOL], namespace: NAMESPACE, images: { '3.5.7': SPARK_RUNTIME_IMAGE }, policy: { secrets: ['gcp-key'] }, driverService: DEFAULT_DRIVER_SERVICE });
  await labelPoolNode(bed.core, rules.placement.instanceTypeLabel);
  const clients = kubeClients(bed.testbed.kubeconfig);
  await bootstrap(clients, rules, false);
  await ensureDriverAccount(clients, NAMESPACE, rules.serviceAccount);
  await ensureDriverService(clients, NAMESPACE, DEFAULT_DRIVER_SERVICE);
  // The API writes with its own service account, as in the chart and `testbed up`: its admitted
  // driver pods skip the webhook; Spark's executor pods and anyone else's still go through it.
  const identity = await ensureApiIdentity(clients, NAMESPACE, join(bed.dir, 'testbed'));
  const webhookPort = await freePort();
  const webhook = await startWebhookService({
    clients, rules, certDir: join(bed.dir, 'certs'), port: webhookPort, host: '127.0.0.1',
    dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'],
    registration: { name: 'submission-service', url: `https://127.0.0.1:${webhookPort}/mutate-pods`, apiUser: identity.user },
  });
  // The API with the dashboard on top (the Spark UI proxy), as the CLI builds it; auth off. With
  // the webhook's rules, as the chart and `testbed up` give them: it admits its driver pods
  // itself and writes each Application with the admitted config, so the controller copies
  // nothing (the product's path, for the benches too).
  const apiClients = kubeClients(identity.kubeconfig);
  const cluster = new KubernetesCluster({ clients: apiClients, namespace: NAMESPACE, rules });
  await cluster.start();
  const app = await buildService({ cluster, auth: { enabled: false, store: { verify: () => undefined, byId: () => undefined } }, sessionSecret: randomBytes(32) });
  const baseUrl = await app.listen({ port: 0, host: '127.0.0.1' });
  const api: ApiInstance = { app, cluster, kubeClients: apiClients, baseUrl, close: async () => { await app.close(); await cluster.close(); } };
  // Before the node stops (teardowns run last-registered first): no pod is admitted meanwhile.
  t.teardown(async () => {
    await api.close().catch(() => undefined);
    await webhook.close().catch(() => undefined);
  });
  return { ...bed, namespace: NAMESPACE, rules, clients, api, call: (method, path, body, timeoutMs) => httpCall(api.baseUrl, method, path, body, timeoutMs) };
}
