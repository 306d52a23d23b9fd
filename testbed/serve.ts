// `testbed serve`: everything of `testbed up` in this one (detached) process, stopped together
// on SIGTERM: the control plane, namespace and CRDs (fake Nodes with --nodes), a real node
// with --real-node (real-node.ts; and its NetworkPolicy enforcer with --network-policies), the webhook as its own process (as the chart runs it,
// registered with its CA; the API's own service account's admitted pods skip it), FakeKubelet (a test
// double of a kubelet) with --run-pods, the API in Kubernetes mode, and the
// notebook gateway as its own process (`submission-service gateway --api-url`, as the chart's
// notebook-service runs it, with its own API key).
import { type ChildProcess, spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { createFakeNodes, ensureCrds, ensureDriverAccount, ensureNamespace } from '../cluster/kubernetes/bootstrap.js';
import { kubeClients } from '../cluster/kubernetes/client.js';
import { ensureDriverService } from '../cluster/kubernetes/driver-service.js';
import { KubernetesCluster } from '../cluster/kubernetes/kubernetes-cluster.js';
import { defaultDataDir, findSpark, readNodePools, thisMachinePool } from '../cli/config.js';
import { SparkEnvs } from '../cluster/local/spark-envs.js';
import { gatewaySecret, localGatewayKey } from '../cli/gateway-wiring.js';
import { gatewayProof } from '../lib/gateway-proof.js';
import { rulesFrom } from '../cli/rules.js';
import { buildService } from '../cli/service.js';
import { loadSessionSecret } from '../dashboard/session-secret.js';
import { freePort } from '../lib/free-port.js';
import { loggerOptions } from '../lib/logger.js';
import type { AdmissionRules } from '../domain/index.js';
import { FileKeyStore } from '../submit-api/auth/key-store.js';
import { ensureApiIdentity } from './api-identity.js';
import { startTestbed, type Testbed } from './control-plane.js';
import { DEFAULT_DRIVER_SERVICE } from '../domain/index.js';
import { productArgs } from './entry.js';
import { FakeKubelet } from './fake-kubelet.js';
import { profileOnSignal } from './cpu-profile.js';
import { type HistorySpark, startHistoryBed } from './history-bed.js';
import { nodeIp, type RealNode, realNodeUnavailable, startRealNode } from './real-node.js';
import { readyNodeForSpark, writeRealNodePools } from './real-node-spark.js';

export const serveFlags = {
  'node-pools': { type: 'string' },
  nodes: { type: 'boolean', default: false },
  'run-pods': { type: 'boolean', default: false },
  'real-node': { type: 'boolean', default: false },
  // With --real-node: kube-router's policy controller beside the node's bridge CNI (node-policy.ts),
  // so NetworkPolicies are enforced (the chart's, with --cluster-only; any one applies).
  'network-policies': { type: 'boolean', default: false },
  // The cluster alone, for what installs the service itself (the Helm chart): no namespace,
  // CRDs, webhook, API or gateway of the test bed's.
  'cluster-only': { type: 'boolean', default: false },
  dir: { type: 'string', default: join(defaultDataDir(), 'cluster') },
  port: { type: 'string', default: '0' },
  'gateway-port': { type: 'string', default: '0' },
  namespace: { type: 'string', default: 'spark-apps' },
  auth: { type: 'string', default: 'off' },
  s3: { type: 'boolean', default: false },
} as const;

export interface ServeOptions { 'node-pools'?: string; nodes: boolean; 'run-pods': boolean; 'real-node': boolean; 'network-policies': boolean; 'cluster-only': boolean; dir: string; port: string; 'gateway-port': string; namespace: string; auth: string; s3: boolean }

/** What `serve` writes to DIR/state.json once everything answers (and removes when it stops). */
export interface ServeState {
  pid: number; baseUrl: string; notebooksUrl: string; kubeconfig: string; webhook: string;
  /** With --real-node: where its containerd listens and its binaries are (`testbed import-image`). */
  node?: { name: string; socket: string; binDir: string };
}

/**
 * What the node flags start, checked before anything starts: a real node (--real-node), and on
 * it the NetworkPolicy enforcer (--network-policies, which needs the real node and what
 * node-policy.ts says the enforcer needs on this machine).
 */
export function nodeChoices(values: Pick<ServeOptions, 'real-node' | 'run-pods' | 'network-policies'>, enforcerUnavailable = () => realNodeUnavailable({ enforceNetworkPolicy: true })): { realNode: boolean; enforceNetworkPolicy: boolean; appNetworkPolicies: boolean } {
  if (values['real-node'] && values['run-pods']) throw new Error('--real-node runs pods itself; --run-pods (FakeKubelet) is for fake nodes');
  if (values['network-policies'] && !values['real-node']) throw new Error('--network-policies enforces NetworkPolicy on the real node: it needs --real-node (fake nodes run no pod network)');
  const why = values['network-policies'] ? enforcerUnavailable() : undefined;
  if (why) throw new Error(`--network-policies: ${why}`);
  // Where the node enforces policies, the bed's API gives each application its own, as the chart's
  // api does with networkPolicy.enabled (its --app-network-policies).
  return { realNode: values['real-node'], enforceNetworkPolicy: values['network-policies'], appNetworkPolicies: values['network-policies'] };
}

export async function serve(dir: string, values: ServeOptions): Promise<void> {
  rmSync(join(dir, 'state.json'), { force: true });
  profileOnSignal(process.env.TESTBED_CPU_PROFILE_DIR);
  const { realNode, enforceNetworkPolicy, appNetworkPolicies } = nodeChoices(values);
  const testbed = await startTestbed(join(dir, 'testbed'), { scheduler: values.nodes || realNode, nodeControllers: realNode, advertiseAddress: realNode ? nodeIp() : undefined });
  const { kubeconfig } = testbed;
  // Stopped (and its changes to the machine undone) by close(), or by `testbed down` after a crash.
  const node = realNode ? await startRealNode({ dir: join(dir, 'node'), kubeconfig, nodeKubeconfig: join(dir, 'testbed', 'node.kubeconfig'), caFile: join(dir, 'testbed', 'pki', 'ca.crt'), enforceNetworkPolicy }) : undefined;
  const clients = kubeClients(kubeconfig);
  if (values['cluster-only']) return clusterOnly(dir, testbed, node);
  await ensureNamespace(clients, values.namespace);
  // A real node runs Spark as written in one step: it is the (given or its own) pool's node, and
  // every offered version's image is built (cached) and in its containerd (real-node-spark.ts).
  const nodePools = realNode ? writeRealNodePools(dir, values['node-pools']) : values['node-pools'];
  if (node) await readyNodeForSpark(node, clients.core, rulesFrom(nodePools, values.namespace));
  // --s3: event logs and archived logs in the test bed's S3 server, Spark's History Server on them
  // (on the machine's own address when the node's pods write there).
  const historyBed = values.s3
    ? await startHistoryBed({
      dir, clients, namespace: values.namespace, rules: rulesFrom(nodePools, values.namespace),
      sparks: await historySparks(rulesFrom(nodePools, values.namespace).engineVersions), host: realNode ? nodeIp() : undefined,
    })
    : undefined;
  const fileRules = historyBed?.rules ?? rulesFrom(nodePools, values.namespace);
  // On a real node executors reach their driver by DNS, under the namespace's drivers' Service.
  const rules = realNode ? { ...fileRules, driverService: fileRules.driverService ?? DEFAULT_DRIVER_SERVICE } : fileRules;
  await ensureCrds(clients);
  if (values.nodes) await createFakeNodes(clients, rules);
  // Spark's own driver creates its executors on a real node: it needs its service account (with
  // the chart's Role and drivers' admission policy).
  if (realNode) await ensureDriverAccount(clients, values.namespace, rules.serviceAccount, rules.policy.serviceAccounts);
  if (rules.driverService) await ensureDriverService(clients, values.namespace, rules.driverService);
  // The webhook in its own process, as the chart runs it: under load the API's event loop
  // and the webhook's do not queue behind each other (bench/kubernetes/controller-ceiling.ts).
  // The API writes with its own service account, as in the chart: its admitted pods skip the webhook.
  const identity = await ensureApiIdentity(clients, values.namespace, join(dir, 'testbed'));
  const webhook = await startWebhook(dir, kubeconfig, values, webhookConfigFile(dir, nodePools, rules), identity.user);
  // A test double for a kubelet: runs driver pods as local Spark processes (README, "The test bed").
  const kubelet = values['run-pods']
    ? new FakeKubelet({ clients, namespace: values.namespace, dataDir: join(dir, 'kubelet'), cores: availableParallelism(), ...findSpark(), classPath: historyBed?.classPath })
    : undefined;
  await kubelet?.start();
  const cluster = new KubernetesCluster({ clients: kubeClients(identity.kubeconfig), namespace: values.namespace, logArchive: historyBed?.logArchive, rules, appNetworkPolicies });
  await cluster.start();
  const history = await historyBed?.history(cluster.events);
  // Ended runs' event logs into their jobs' profiles (sizing from past runs), as the chart's API does.
  if (history) cluster.recordJobProfiles((appName) => history.readProfile(appName), rules);
  const keysDir = join(dir, 'keys');
  const store = new FileKeyStore(keysDir);
  const api = await buildService({
    cluster, auth: { enabled: values.auth === 'on', store },
    sessionSecret: loadSessionSecret(keysDir), logger: loggerOptions('api'),
    // The gateway below derives its proof from its data dir's gateway-secret (or the env's).
    gatewayProof: gatewayProof(gatewaySecret(keysDir)),
    history,
    jobs: cluster.jobs,
  });
  const baseUrl = await api.listen({ port: Number(values.port), host: '127.0.0.1' });
  // The gateway shares the API's key store (users' keys open /notebooks too) and has a key of its own in it.
  const gateway = await startGateway(baseUrl, values, keysDir, localGatewayKey(keysDir, store));
  let closing = false;
  const close = async () => {
    if (closing) return;
    closing = true;
    await gateway.stop();
    await api.close().catch(() => undefined);
    await history?.close();
    await cluster.close();
    await kubelet?.stop();
    await historyBed?.stop().catch(() => undefined);
    await webhook.stop();
    await stopClusterAndExit(dir, testbed, node);
  };
  process.once('SIGTERM', () => void close());
  process.once('SIGINT', () => void close());
  // A gateway that dies leaves the rest useless for notebooks: say so and stop everything.
  for (const [child, what] of [[gateway, 'the notebook gateway'], [webhook, 'the webhook']] as const) {
    child.child.once('exit', (code, signal) => {
      if (closing) return;
      process.stderr.write(`testbed: ${what} exited (${code ?? signal}); stopping\n`);
      void close();
    });
  }
  const state: ServeState = {
    pid: process.pid, baseUrl, notebooksUrl: gateway.url, kubeconfig, webhook: webhook.url,
    node: node && { name: node.name, socket: node.socket, binDir: node.binDir },
  };
  writeFileSync(join(dir, 'state.json'), JSON.stringify(state));
  process.stdout.write(`NOTEBOOKS_URL=${state.notebooksUrl}\nBASE_URL=${baseUrl}\nKUBECONFIG=${kubeconfig}\n`);
}

/** The last of every stop: the node (undoing its changes to the machine), the control plane, the state file. */
async function stopClusterAndExit(dir: string, testbed: Testbed, node: RealNode | undefined): Promise<never> {
  await node?.stop().catch((error: Error) => process.stderr.write(`testbed: stopping the node: ${error.message}\n`));
  await testbed.stop();
  rmSync(join(dir, 'state.json'), { force: true });
  process.exit(0);
}

/** `--cluster-only`: the state names the cluster (and node) only; SIGTERM stops them. */
function clusterOnly(dir: string, testbed: Testbed, node: RealNode | undefined): void {
  const close = () => void stopClusterAndExit(dir, testbed, node);
  process.once('SIGTERM', close);
  process.once('SIGINT', close);
  const state: ServeState = {
    pid: process.pid, baseUrl: '', notebooksUrl: '', kubeconfig: testbed.kubeconfig, webhook: '',
    node: node && { name: node.name, socket: node.socket, binDir: node.binDir },
  };
  writeFileSync(join(dir, 'state.json'), JSON.stringify(state));
  process.stdout.write(`KUBECONFIG=${testbed.kubeconfig}\n`);
}

interface Child { child: ChildProcess; url: string; stop(): Promise<void> }

/** `submission-service gateway --api-url`, run from source, with its own API key. */
async function startGateway(apiUrl: string, values: ServeOptions, keysDir: string, ownKey: string): Promise<Child> {
  const args = ['gateway', '--api-url', apiUrl, '--host', '127.0.0.1', '--port', values['gateway-port'], '--auth', values.auth, '--data-dir', keysDir];
  return startChild('the notebook gateway', args, { SUBMISSION_SERVICE_API_KEY: ownKey }, /Notebook gateway at (\S+\/notebooks)/);
}

/** `submission-service webhook`, registered with its CA; resolves once registered and serving. */
async function startWebhook(dir: string, kubeconfig: string, values: ServeOptions, config: string | undefined, apiUser: string): Promise<Child> {
  const port = String(await freePort());
  const args = [
    'webhook', '--kubeconfig', kubeconfig, '--namespace', values.namespace, '--cert-dir', join(dir, 'certs'),
    '--host', '127.0.0.1', '--port', port, '--dns-name', 'localhost', '--metrics-port', '0',
    '--register', 'submission-service', '--url', `https://127.0.0.1:${port}/mutate-pods`, '--api-user', apiUser,
    ...(config ? ['--node-pools', config] : []),
  ];
  return startChild('the webhook', args, {}, /Submission Service webhook at (\S+)/);
}

/**
 * The webhook's config: the node-pool file (or this machine's pool) with what the test bed
 * adds to its rules (--s3: the history bed's event logs; --real-node: the drivers' Service),
 * written beside the state, so that the webhook admits what the API expects.
 */
function webhookConfigFile(dir: string, nodePools: string | undefined, rules: AdmissionRules): string {
  const { eventLog, driverService } = rules;
  const file = {
    ...(nodePools ? readNodePools(nodePools) : { nodePools: [thisMachinePool()] }),
    ...(eventLog ? {
      history: {
        eventLogDir: eventLog.dir, rollingMaxFileSize: eventLog.rollingMaxFileSize,
        s3Endpoint: eventLog.s3?.endpoint, pathStyleAccess: eventLog.s3?.pathStyleAccess, credentialsSecret: eventLog.s3?.credentialsSecret, s3Region: eventLog.s3?.region,
      },
    } : {}),
    ...(driverService ? { driverService } : {}),
  };
  const path = join(dir, 'webhook-config.json');
  writeFileSync(path, JSON.stringify(file));
  return path;
}

/** The product's command line from source as a child; resolves with the URL its ready line names. */
async function startChild(what: string, args: string[], env: Record<string, string>, ready: RegExp): Promise<Child> {
  const child = spawn(process.execPath, productArgs(args), { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  const gone = new Promise<void>((ok) => child.once('exit', () => ok()));
  const kill = () => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL'); };
  process.once('exit', kill);
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    const timer = setTimeout(kill, 5_000);
    await gone;
    clearTimeout(timer);
  };
  const lines = createInterface({ input: child.stdout! });
  const url = await new Promise<string>((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`${what} did not start within 60 s`)), 60_000);
    child.once('exit', (code) => { clearTimeout(timer); fail(new Error(`${what} exited (${code}) before it listened`)); });
    lines.on('line', (line) => {
      process.stdout.write(`${line}\n`);
      const found = ready.exec(line)?.[1];
      if (found) { clearTimeout(timer); ok(found); }
    });
  }).catch(async (error: unknown) => { await stop(); throw error; });
  return { child, url, stop };
}

/** The Sparks prepared here among `offered`, newest first (setup's own, else from PATH, last). */
async function historySparks(offered: readonly string[]): Promise<HistorySpark[]> {
  const base = findSpark();
  const prepared = await new SparkEnvs({ base }).preparedNewestFirst(offered);
  return prepared.length > 0 ? prepared : [{ version: offered[0] ?? '3.5.7', ...base }];
}
