// Spark's real cluster mode for a test or a bench: the test bed with a real node
// (helpers/real-node.ts), the Spark runtime image built by images/build.sh (cached) and
// imported into the node's containerd, and on top what the service needs in a cluster: the
// namespace and CRDs, the drivers' service account, Role and admission policy (as the chart gives them), the
// webhook registered with its CA, and the API with the dashboard in Kubernetes mode (its
// controller included, the webhook's rules and its own identity, as the chart runs it).
// The node is one node pool: it is labelled as such, and the pool's schedulable maxima
// leave room for a driver and two executors on this machine's two cores (the same pool,
// label and images as `testbed up --real-node`: testbed/real-node-spark.ts). With `history`,
// event logs go to the test bed's S3 server and Spark's History Server reads them
// (testbed/history-bed.ts), as `testbed up --real-node --s3` sets it up; with `schedules`, the
// API serves /api/schedules/ and the Schedule controller runs under the Lease, as the chart's API
// does (cli/kubernetes.ts); with `history` and `jobProfiles`, each ended run's event log goes into
// its job's JobProfile (sizing from past runs).
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { NodePool } from '../../schemas/index.js';
import { ensureDriverAccount } from '../../cluster/kubernetes/bootstrap.js';
import { kubeClients, type KubeClients } from '../../cluster/kubernetes/client.js';
import { ensureDriverService } from '../../cluster/kubernetes/driver-service.js';
import { buildService } from '../../cli/service.js';
import { startWebhookService } from '../../cli/webhook-service.js';
import { KubernetesCluster } from '../../cluster/kubernetes/kubernetes-cluster.js';
import { freePort } from '../../lib/free-port.js';
import { ensureApiIdentity } from '../../testbed/api-identity.js';
import { nodeIp } from '../../testbed/real-node.js';
import { labelPoolNode, REAL_NODE_POOL, sparkRuntimeArchives, sparkRuntimeImage } from '../../testbed/real-node-spark.js';
import { type HistoryBed, startHistoryBed } from '../../testbed/history-bed.js';
import { findSpark } from '../../cli/config.js';
import { kubernetesSchedules } from '../../cli/kubernetes.js';
import { SparkEnvs } from '../../cluster/local/spark-envs.js';
import { type AdmissionRules, buildRules, DEFAULT_DRIVER_SERVICE, DEFAULT_ENGINE_VERSIONS } from '../../domain/index.js';
import { bootstrap, httpCall, type ApiInstance, type Reply } from './kubernetes.js';
import { type RealNodeBed, realNodeUnavailable, startRealNodeBed } from './real-node.js';

interface TestLike { teardown(fn: () => unknown): void }

/** The image images/build.sh names the Spark runtime (test/images/images.test.ts checks it). */
export const SPARK_RUNTIME_IMAGE = sparkRuntimeImage('3.5.7');
export const PI_PY = 'local:///opt/spark/examples/src/main/python/pi.py';
const NAMESPACE = 'spark-apps';

/** This machine as one pool: 2 cores; maxima so that a driver and two executors fit together. */
export const NODE_POOL: NodePool = REAL_NODE_POOL;
export { labelPoolNode };

/** Why Spark cannot run on a real node here, or undefined. */
export function sparkNodeUnavailable(): string | undefined {
  const node = realNodeUnavailable();
  if (node) return node;
  const missing = ['mmdebstrap', 'buildah'].filter((tool) => spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0);
  return missing.length ? `the Spark runtime image needs ${missing.join(', ')} (apt-get install mmdebstrap buildah)` : undefined;
}

/** Why Spark with event logs in S3 cannot run on a real node here (the S3 server, both S3A jar sets), or undefined. */
export function sparkHistoryNodeUnavailable(): string | undefined {
  const missing = ['SUBMISSION_SERVICE_S3_SERVER', 'SUBMISSION_SERVICE_S3A_JARS', 'SUBMISSION_SERVICE_S3A_JARS_SPARK4'].filter((name) => !process.env[name]);
  return sparkNodeUnavailable() ?? (missing.length ? `${missing.join(', ')} not set (scripts/setup.sh with SETUP_TEST_TOOLS=1)` : undefined);
}

export interface SparkNodeBed extends RealNodeBed {
  namespace: string;
  /** With `history`: the S3 server's bucket and Spark's History Server on it. */
  historyBed?: HistoryBed;
  rules: AdmissionRules;
  clients: KubeClients;
  /** The webhook, in this process (its admission cache: the JobProfiles it sizes executor pods from). */
  webhook: Awaited<ReturnType<typeof startWebhookService>>;
  api: ApiInstance;
  call(method: string, path: string, body?: unknown, timeoutMs?: number): Promise<Reply>;
}

export interface SparkNodeOptions {
  /** The Spark versions whose runtime image the node gets (default: 3.5.7); all are offered. */
  versions?: string[];
  /** Event logs in the test bed's S3 server, Spark's History Server on them, the log archive. */
  history?: boolean;
  /** Schedules (the Schedule resources and their controller) beside the API, as `submission-service api` has them. */
  schedules?: boolean;
  /** With `history`: each ended run's event log into its job's JobProfile, as `submission-service api` does with a history section. */
  jobProfiles?: boolean;
}

export async function startSparkNodeBed(t: TestLike, options: SparkNodeOptions = {}): Promise<SparkNodeBed> {
  const versions = options.versions ?? ['3.5.7'];
  const archives = await sparkRuntimeArchives(versions); // before the node: a cold build takes long
  const bed = await startRealNodeBed(t, { images: [...archives.values()] });
  const images = Object.fromEntries(versions.map((v) => [v, sparkRuntimeImage(v)]));
  const baseRules = buildRules({
    nodePools: [NODE_POOL], namespace: NAMESPACE, images, engineVersions: DEFAULT_ENGINE_VERSIONS.filter((v) => versions.includes(v)),
    policy: { secrets: ['gcp-key'] }, driverService: DEFAULT_DRIVER_SERVICE,
  });
  await labelPoolNode(bed.core, baseRules.placement.instanceTypeLabel);
  const clients = kubeClients(bed.testbed.kubeconfig);
  await bootstrap(clients, baseRules, false);
  const historyBed = options.history ? await startNodeHistoryBed(t, bed.dir, clients, baseRules) : undefined;
  const rules = historyBed?.rules ?? baseRules;
  await ensureDriverAccount(clients, NAMESPACE, rules.serviceAccount, rules.policy.serviceAccounts);
  await ensureDriverService(clients, NAMESPACE, DEFAULT_DRIVER_SERVICE);
  // The API writes with its own service account, as in the chart and `testbed up`: its admitted
  // driver pods skip the webhook; Spark's executor pods and anyone else's still go through it.
  const identity = await ensureApiIdentity(clients, NAMESPACE, join(bed.dir, 'testbed'));
  const webhookPort = await freePort();
  // Closed before the node stops (teardowns run last-registered first), whatever step below fails:
  // a cluster left watching would keep the test's process, and the real node's lock, alive.
  const closers: Array<() => Promise<unknown>> = [];
  t.teardown(async () => { for (const close of closers.reverse()) await close().catch(() => undefined); });
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
  closers.push(() => webhook.close());
  const cluster = new KubernetesCluster({ clients: apiClients, namespace: NAMESPACE, rules, logArchive: historyBed?.logArchive });
  closers.push(() => cluster.close());
  await cluster.start();
  const history = await historyBed?.history(cluster.events);
  if (history) closers.push(() => history.close());
  // As `submission-service api` with a node-pool file that has a history section: the leader records each ended run's profile.
  if (history && options.jobProfiles) cluster.recordJobProfiles((appName) => history.readProfile(appName), rules);
  const schedules = options.schedules ? kubernetesSchedules(cluster, apiClients, NAMESPACE) : undefined;
  const app = await buildService({ cluster, history, jobs: cluster.jobs, schedules, auth: { enabled: false, store: { verify: () => undefined, byId: () => undefined } }, sessionSecret: randomBytes(32) });
  closers.push(() => app.close());
  const baseUrl = await app.listen({ port: 0, host: '127.0.0.1' });
  // The teardown above closes each (the API first): no pod is admitted once the node stops.
  const api: ApiInstance = { app, cluster, kubeClients: apiClients, baseUrl, close: async () => { await app.close(); await history?.close(); await cluster.close(); } };
  return { ...bed, namespace: NAMESPACE, historyBed, rules, clients, webhook, api, call: (method, path, body, timeoutMs) => httpCall(api.baseUrl, method, path, body, timeoutMs) };
}

/** The S3 server on the machine's own address (the node's pods write to it) and the newest Spark's History Server. */
async function startNodeHistoryBed(t: TestLike, dir: string, clients: KubeClients, rules: AdmissionRules): Promise<HistoryBed> {
  const base = findSpark();
  const sparks = await new SparkEnvs({ base }).preparedNewestFirst(rules.engineVersions);
  const historyBed = await startHistoryBed({ dir, clients, namespace: rules.namespace, rules, sparks, host: nodeIp() });
  t.teardown(() => historyBed.stop());
  return historyBed;
}
