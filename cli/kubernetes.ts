// `submission-service api` and `submission-service webhook`: the processes of a cluster deployment.
import { parseArgs } from 'node:util';
import { type KubeClients, kubeClients } from '../cluster/kubernetes/client.js';
import { ScheduleReconciler } from '../cluster/kubernetes/schedule-reconciler.js';
import type { TickAdmission } from '../cluster/schedules/runner.js';
import { KubernetesScheduleStore } from '../cluster/kubernetes/schedule-store.js';
import { createLogger, loggerOptions } from '../lib/logger.js';
import { KubernetesCluster } from '../cluster/kubernetes/kubernetes-cluster.js';
import { timingForLease } from '../cluster/kubernetes/lease-decision.js';
import { loadSessionSecret } from '../dashboard/session-secret.js';
import { FileKeyStore } from '../submit-api/auth/key-store.js';
import { SecretKeyStore } from '../submit-api/auth/secret-key-store.js';
import { startWebhookService } from './webhook-service.js';
import { RetentionSweeper, parseRetention } from '../cluster/history/retention.js';
import { defaultDataDir, parseSecretRef, readNodePools } from './config.js';
import { kubernetesHistory, kubernetesSparkStatic } from './kubernetes-history.js';
import { rulesFrom } from './rules.js';
import { WatchedRules } from './watched-rules.js';
import { fairShareFlags, fairShareFrom } from './fair-share-flags.js';
import { parseIdempotencyWindow } from '../submit-api/idempotency.js';
import { buildService } from './service.js';
import { connectionFlags, connectionLimitsFrom } from './connection-flags.js';
import { apiGatewayProof } from './gateway-wiring.js';
import { Drain } from '../lib/drain.js';
import { DEFAULT_ENGINE_VERSION } from '../domain/index.js';
import { gatewayConnectTokenKey, kubernetesConnectFlags, parseKubernetesConnectFlags, startKubernetesConnect } from './connect-kubernetes.js';

const common = {
  kubeconfig: { type: 'string' },
  namespace: { type: 'string', default: process.env.APPLICATIONS_NAMESPACE ?? 'spark-apps' },
  port: { type: 'string' },
  host: { type: 'string', default: '0.0.0.0' },
  'shutdown-delay-seconds': { type: 'string', default: '0', description: 'on SIGTERM, serve on this long (answers with Connection: close) before closing, so that a Service stops sending connections first (lib/drain.ts); the chart sets 5' },
} as const;

function shutdownDelayMs(value: string): number {
  const seconds = Number(value);
  if (!Number.isFinite(seconds) || seconds < 0) throw new Error('--shutdown-delay-seconds takes a number of seconds, 0 or more');
  return seconds * 1000;
}

/** On SIGTERM or SIGINT: drain (lib/drain.ts), then close. */
function onSignal(drain: Drain, delayMs: number, close: () => Promise<void>) {
  const stop = () => {
    drain.run(delayMs).then(close).then(() => process.exit(0), (error: Error) => {
      process.stderr.write(`shutdown failed: ${error.message}\n`);
      process.exit(1);
    });
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

/** Schedules as custom resources; their controller runs on the replica holding the Lease (cluster/kubernetes/schedule-reconciler.ts). */
export function kubernetesSchedules(cluster: KubernetesCluster, clients: KubeClients, namespace: string) {
  const store = new KubernetesScheduleStore(clients, namespace);
  const reconciler = new ScheduleReconciler({
    store, cluster, mayWrite: () => cluster.manager.isLeader,
    log: (level, message) => { if (level !== 'info') process.stderr.write(`${message}\n`); },
  });
  cluster.manager.register(reconciler.registration);
  return { store, changed: () => reconciler.wake(), admitTicksWith: (admit: TickAdmission) => reconciler.admitTicksWith(admit) };
}

export async function apiCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      ...common,
      auth: { type: 'string', default: 'on' },
      'data-dir': { type: 'string', default: defaultDataDir() },
      controller: { type: 'string', default: 'on', description: 'on: run for the Lease and, while holding it, write application status (README "Kubernetes mode"); off: read only' },
      'lease-seconds': { type: 'string', default: '15', description: 'how long the Lease holds without renewal (client-go\'s 15 s); the renew deadline is 2/3 of it, the retry period 2/15 (10 s and 2 s)' },
      'trust-proxy': { type: 'boolean', default: false, description: 'honour X-Forwarded-Proto/-For from the proxy in front (an ingress): Secure cookies behind TLS' },
      'spark-ui-host': { type: 'string', description: 'serve each proxied Spark UI on <app>.NAME only (an origin per application); absent: on the service\'s host, sandboxed' },
      ...connectionFlags,
      'keys-secret': { type: 'string', description: 'NAMESPACE/NAME of the Secret whose keys.json holds the API keys (watched; instead of <data-dir>/keys.json)' },
      'node-pools': { type: 'string', description: 'the node-pool file; its policy section says whether users may act on applications of other keys, its history section where event logs and archived logs are' },
      placement: { type: 'string', description: 'as the webhook\'s --placement: the API admits its own driver pods with the same rules' },
      retention: { type: 'string', default: '30d', description: 'how long ended applications, their event logs and archived logs are kept (30d, 12h, 90m; off: for ever)' },
      'log-follow-limit': { type: 'string', default: '32', description: 'archive the logs of at most this many running pods as they run (5 MiB of /tmp each); the others are read whole at their end (0: none)' },
      'log-archive-max-mb': { type: 'string', default: '1024', description: 'an archived log keeps at most this many MiB, then a line saying it was cut' },
      'idempotency-window': { type: 'string', default: '24h', description: 'how long an Idempotency-Key answers with the application it made (24h, 90m, 45s)' },
      'spark-static-dir': { type: 'string', description: 'a folder of Spark\'s UI files per offered version (DIR/VERSION/webui.js …; the chart\'s api.sparkStaticFromImages fills it from the runtime images): each version\'s pages get their own' },
      'app-network-policies': { type: 'boolean', default: false, description: 'give each application a NetworkPolicy: its driver and executors reach one another, no other application reaches them (the chart\'s networkPolicy.enabled; needs a network plugin that enforces NetworkPolicy)' },
      ...fairShareFlags,
      // The Spark Connect endpoint (cli/connect-kubernetes.ts); --connect-port off: none.
      ...kubernetesConnectFlags,
    },
  });
  if (values.auth !== 'on' && values.auth !== 'off') throw new Error('--auth takes on or off');
  const connect = parseKubernetesConnectFlags(values);
  const { leaseSeconds, followLimit, maxLogMiB } = controllerFlags(values);
  const delayMs = shutdownDelayMs(values['shutdown-delay-seconds']);
  const clients = kubeClients(values.kubeconfig);
  // --keys-secret: keys verified against a watched copy of the Secret, so a revocation counts
  // within the watch's latency on every replica (submit-api/auth/secret-key-store.ts).
  const keysSecret = values['keys-secret'] === undefined ? undefined : parseSecretRef(values['keys-secret'], '--keys-secret');
  const secretStore = keysSecret && values.auth === 'on'
    ? new SecretKeyStore({ kc: clients.kc, core: clients.core, ...keysSecret, log: (message) => void process.stderr.write(`${message}\n`) })
    : undefined;
  // Listed before the port opens: a replica is never ready with an empty copy of the keys.
  await secretStore?.start();
  const historyWiring = kubernetesHistory(values['node-pools'] ? readNodePools(values['node-pools']).history : undefined);
  const watchedRules = watchNodePools(values['node-pools'], values.namespace, values.placement);
  const cluster = new KubernetesCluster({
    clients, namespace: values.namespace, controller: values.controller === 'on',
    lease: timingForLease(leaseSeconds * 1000), logArchive: historyWiring.logArchive, eventLogAccess: historyWiring.eventLogAccess,
    logFollow: { followLimit, maxLogBytes: maxLogMiB * 1024 * 1024 }, appNetworkPolicies: values['app-network-policies'],
    // The webhook's node-pool file (the chart gives both the same): Applications are written with their config.
    rules: watchedRules,
    // A retried kernel's launcher token derives from the secret shared with the notebook gateway.
    gatewaySecret: process.env.SUBMISSION_SERVICE_GATEWAY_SECRET || undefined,
    // So do Connect servers' own tokens, under a key of their own: every replica must compute
    // them (any relays any session) and they outlive a restart (the driver pods do), so the key
    // comes from the secret the chart gives every replica (gateway.secret), never from user data.
    connectTokenKey: gatewayConnectTokenKey(),
  });
  // The cache is listed before the port opens: a replica never answers from an empty cache.
  await cluster.start();
  const retentionMs = parseRetention(values.retention);
  const history = historyWiring.history(cluster.events, retentionMs, (message) => void process.stderr.write(`${message}\n`));
  // Each ended run's event log into its job's profile (sizing from past runs), on the controller's leader.
  if (history && watchedRules && values.controller === 'on') cluster.recordJobProfiles((appName) => history.readProfile(appName), watchedRules);
  // Only the controller's replica sweeps: one writer of deletions.
  const sweeper = retentionMs === undefined || values.controller !== 'on' ? undefined : new RetentionSweeper({
    cluster, history, retentionMs, onError: (error, appName) => void process.stderr.write(`retention: ${appName ?? ''} ${(error as Error)?.message ?? String(error)}\n`),
  });
  const schedules = kubernetesSchedules(cluster, clients, values.namespace);
  const fileStore = secretStore ? undefined : new FileKeyStore(values['data-dir']);
  const store = secretStore ?? fileStore!;
  const policy = watchedRules?.current().policy;
  // Session cookies must verify on every replica: the chart gives all of them the same secret
  // (SUBMISSION_SERVICE_SESSION_SECRET from the auth Secret); without it, <data-dir>/session-secret.
  const gatewayProof = apiGatewayProof();
  const api = await buildService({
    cluster, auth: { enabled: values.auth === 'on', store }, policy, sessionSecret: loadSessionSecret(values['data-dir']),
    trustProxy: values['trust-proxy'], logger: loggerOptions('api'), sparkUiHost: values['spark-ui-host'],
    // Kernel labels only from the notebook gateway: SUBMISSION_SERVICE_GATEWAY_SECRET, shared with it.
    gatewayProof,
    fairShare: fairShareFrom(values, values['node-pools']),
    history,
    jobs: cluster.jobs,
    // Spark's static files by version, the same for every name (dashboard/spark-ui-static.ts, docs/security.md).
    sparkStatic: kubernetesSparkStatic(historyWiring.sparkStatic, values['spark-static-dir']),
    idempotencyWindowMs: parseIdempotencyWindow(values['idempotency-window']),
    schedules,
    ...connectionLimitsFrom(values),
  });
  const drain = new Drain();
  drain.attach(api.server);
  const apiPort = Number(values.port ?? 8080);
  const address = await api.listen({ port: apiPort, host: values.host });
  const endpoint = connect && await startKubernetesConnect(values.host, { settings: connect, clients, cluster, auth: { enabled: values.auth === 'on', store }, log: api.log,
    dataDir: values['data-dir'], apiUrl: () => `http://127.0.0.1:${apiPort}`, defaultVersion: watchedRules?.current().defaultEngineVersion ?? DEFAULT_ENGINE_VERSION, proof: gatewayProof });
  const keysFrom = values.auth !== 'on' ? '' : secretStore ? `, API keys from Secret ${secretStore.ref}` : `, API keys from ${fileStore!.path}`;
  process.stdout.write(`Submission Service API (Kubernetes mode, namespace ${values.namespace}${keysFrom}) at ${address}/api/\n`);
  // The endpoint's sessions are stopped first: none is left running unreachable.
  onSignal(drain, delayMs, async () => { watchedRules?.close(); sweeper?.close(); await endpoint?.close(); await api.close(); await history?.close(); await secretStore?.stop(); await cluster.close(); });
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
      'api-user': { type: 'string', description: 'with --register: the username the API writes pods with; its admitted driver pods skip this webhook (the chart writes the same condition itself)' },
      'cert-secret': { type: 'string', description: 'NAMESPACE/NAME of the Secret that keeps the CA and serving certificate for every replica' },
      'metrics-port': { type: 'string', default: '9090', description: 'plain-HTTP port of GET /metrics (0: any free port)' },
    },
  });
  const delayMs = shutdownDelayMs(values['shutdown-delay-seconds']);
  const drain = new Drain();
  const clients = kubeClients(values.kubeconfig);
  const watchedRules = watchNodePools(values['node-pools'], values.namespace, values.placement);
  const rules = watchedRules ?? rulesFrom(undefined, values.namespace, values.placement);
  const service = values['service-name'] && values['service-namespace']
    ? { name: values['service-name'], namespace: values['service-namespace'] } : undefined;
  // --cert-secret NAMESPACE/NAME: certificates shared by all replicas (cli/webhook-service.ts).
  const certSecret = values['cert-secret'] === undefined ? undefined : parseSecretRef(values['cert-secret'], '--cert-secret');
  const dnsNames = [...values['dns-name'], ...(service ? [`${service.name}.${service.namespace}.svc`, `${service.name}.${service.namespace}.svc.cluster.local`] : [])];
  const webhook = await startWebhookService({
    clients, rules, certDir: values['cert-dir'], port: Number(values.port ?? 9443), host: values.host,
    dnsNames: dnsNames.length ? dnsNames : ['localhost'], ipAddresses: ['127.0.0.1'],
    registration: values.register ? { name: values.register, url: values.url, service, apiUser: values['api-user'] } : undefined,
    certSecret,
    logger: createLogger('webhook'),
    metricsPort: Number(values['metrics-port']),
    drain,
  });
  process.stdout.write(`Submission Service webhook at ${webhook.url} (metrics at ${webhook.metricsUrl})\n`);
  onSignal(drain, delayMs, async () => { watchedRules?.close(); await webhook.close(); });
  return -1;
}

/**
 * The node-pool file both enforcement points of admission follow (cli/watched-rules.ts): the
 * chart mounts one ConfigMap into the API and the webhook. Absent: no file to follow.
 */
function watchNodePools(file: string | undefined, namespace: string, placement: string | undefined): WatchedRules | undefined {
  if (!file) return undefined;
  const log = (message: string) => void process.stderr.write(`${message}\n`);
  return new WatchedRules({ file, namespace, placement, log }).watch();
}

/** The controller's flags, checked: --controller, --lease-seconds, --log-follow-limit, --log-archive-max-mb. */
function controllerFlags(values: { controller?: string; 'lease-seconds'?: string; 'log-follow-limit'?: string; 'log-archive-max-mb'?: string }) {
  if (values.controller !== 'on' && values.controller !== 'off') throw new Error('--controller takes on or off');
  const leaseSeconds = Number(values['lease-seconds']);
  if (!Number.isInteger(leaseSeconds) || leaseSeconds < 1) throw new Error('--lease-seconds takes a whole number of seconds, at least 1');
  const followLimit = Number(values['log-follow-limit']);
  const maxLogMiB = Number(values['log-archive-max-mb']);
  if (!Number.isInteger(followLimit) || followLimit < 0) throw new Error('--log-follow-limit takes a whole number, at least 0');
  if (!Number.isInteger(maxLogMiB) || maxLogMiB < 1) throw new Error('--log-archive-max-mb takes a whole number of MiB, at least 1');
  return { leaseSeconds, followLimit, maxLogMiB };
}
