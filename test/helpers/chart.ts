// The Helm chart installed onto the test bed's real node as a platform team installs it, for the
// tests of the installed service (chart-install, chart-faults, chart-spark, kernel-node): the
// images this repository builds (images/build.sh, cached) imported into the node's containerd,
// the release namespace enforcing the `restricted` Pod Security Standard (every pod of the
// chart's must meet it), values naming those images, `helm install --wait`, and the API reached
// through its Service's ClusterIP. What the tests differ in are options of `installChart`:
// more values, the node labelled as the values' one pool, an admin key made up front.
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { V1Pod } from '@kubernetes/client-node';
import type { CreatedKey } from '../../submit-api/auth/key-store.js';
import { SecretKeyStore } from '../../submit-api/auth/secret-key-store.js';
import { logTail } from '../../testbed/log-tail.js';
import { nodePaths } from '../../testbed/node-config.js';
import { buildRules } from '../../domain/index.js';
import { chartDir, helmBinary } from '../manifests/helm.js';
import { repoRoot } from './api.js';
import { eventually } from './kubernetes.js';
import { type RealNodeBed, realNodeUnavailable, startRealNodeBed } from './real-node.js';
import { labelPoolNode, NODE_POOL, SPARK_RUNTIME_IMAGE } from './spark-node.js';

export const RELEASE = 'ss';
/** The release namespace. */
export const NS = 'submission-service';
/** The applications namespace (the chart's default). */
export const APPS = 'spark-apps';
export const KERNEL_IMAGE = 'localhost/submission-service/kernel:3.5.7';
export const AUTH_SECRET = 'submission-service-auth';

interface TestLike { teardown(fn: () => unknown): void }

/** Why the chart cannot be installed on a real node here, or false. */
export function chartNodeUnavailable(): string | false {
  const missing = ['mmdebstrap', 'buildah'].filter((tool) => spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0);
  return realNodeUnavailable() ?? (missing.length ? `needs ${missing.join(', ')} (apt-get install mmdebstrap buildah)` : false);
}

/** images/build.sh's archives (built, or found in its cache): `name -> path`. */
export function buildImages(): Map<string, string> {
  const out = execFileSync('bash', [join(repoRoot, 'images', 'build.sh')],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 100 * 60_000 });
  return new Map(out.trim().split('\n').map((line) => line.split(' ') as [string, string]));
}

/** The service's version: the image tag images/build.sh gives the service image. */
export const serviceVersion = (): string =>
  JSON.parse(execFileSync('node', ['-p', 'JSON.stringify(require("./package.json").version)'], { cwd: repoRoot, encoding: 'utf8' })) as string;

/** The images this repository builds, as values name them for a registry. */
export const imageValues = (version: string) => ({
  image: { repository: 'localhost/submission-service/submission-service', tag: version },
  images: { '3.5.7': SPARK_RUNTIME_IMAGE },
});

/** `helm ARGS --kubeconfig …`, asynchronous: the test's event loop (and its requests) go on meanwhile. */
export function helmOn(bed: RealNodeBed): (args: string[]) => Promise<string> {
  return async (args) => (await promisify(execFile)(helmBinary(), [...args, '--kubeconfig', bed.testbed.kubeconfig], { encoding: 'utf8' })).stdout;
}

/** `kubectl ARGS` against the test bed, asynchronous like helmOn. */
export function kubectlOn(bed: RealNodeBed): (args: string[]) => Promise<string> {
  return async (args) => (await promisify(execFile)('kubectl', ['--kubeconfig', bed.testbed.kubeconfig, ...args], { encoding: 'utf8', maxBuffer: 1 << 22 })).stdout;
}

export const readyPod = (pod: V1Pod) => pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

export interface Answer { status: number | string; json?: any; text?: string }

/** How many times a call the api shed for load is sent (about 2 minutes of Retry-After). */
const SHED_RETRIES = 24;

/**
 * One call to the installed api. A 503 of its load shedding (the event loop late by more than its
 * limit: a pod under a small CPU limit on a loaded machine) is answered before any handler runs,
 * so nothing was made: the call is sent again after the answer's Retry-After, as a careful client
 * would, a bounded number of times. Any other answer, 503s of other causes included, is returned.
 */
export async function send(agent: Agent | false, base: URL, method: string, path: string, key: string, body?: unknown): Promise<Answer> {
  for (let attempt = 1; ; attempt++) {
    const answer = await sendOnce(agent, base, method, path, key, body);
    if (answer.status !== 503 || !/the service is overloaded/.test(answer.text ?? '') || attempt >= SHED_RETRIES) return answer;
    await new Promise((resolve) => setTimeout(resolve, 5_000));
  }
}

/** One request, answered or failed: the status (or the error's code: ECONNRESET, timeout...) and the body. */
function sendOnce(agent: Agent | false, base: URL, method: string, path: string, key: string, body?: unknown): Promise<Answer> {
  const data = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve) => {
    const req = request({
      agent, host: base.hostname, port: base.port, path, method, timeout: 60_000,
      headers: { ...(data === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) }), authorization: `Bearer ${key}` },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        let json: unknown;
        try { json = JSON.parse(text); } catch { json = text; }
        resolve({ status: res.statusCode!, json, text });
      });
      res.on('error', (error: NodeJS.ErrnoException) => resolve({ status: error.code ?? error.message }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (error: NodeJS.ErrnoException) => resolve({ status: error.code ?? error.message }));
    req.end(data);
  });
}

export const post = (agent: Agent | false, base: URL, path: string, key: string, body: unknown) => send(agent, base, 'POST', path, key, body);

export interface ChartOptions {
  /** Values merged over the images' (and the node pool's); `notebookService` is merged one level down. */
  values?: Record<string, unknown>;
  /** Runs once the release namespace exists, before `helm install`: what must be there before the chart's pods start (a Secret the values name). */
  prepare?: (bed: RealNodeBed) => Promise<void>;
  /** The node labelled as the one node of the one pool the values then declare, so that admitted Spark pods are placed on it. */
  nodePool?: boolean;
  /** false: no admin key (the test makes the keys it needs); default: one, accepted by the replicas. */
  adminKey?: boolean;
  /** Sockets of the keep-alive agent to the API's Service (default 4). */
  agentSockets?: number;
  /** The node enforces NetworkPolicy (kube-router's policy controller, testbed/node-policy.ts), so the chart's policies hold. */
  enforceNetworkPolicy?: boolean;
}

export interface InstalledChart {
  bed: RealNodeBed;
  version: string;
  /** The values file of the install (JSON is YAML), for upgrades. */
  values: string;
  helm: (args: string[]) => Promise<string>;
  kubectl: (args: string[]) => Promise<string>;
  installSeconds: number;
  /** The chart's auth Secret, as `submission-service keys create --secret NS/submission-service-auth` writes it. */
  keys: SecretKeyStore;
  /** Absent with `adminKey: false`. */
  admin?: CreatedKey;
  /** Resolves once the replicas accept the key (they watch the auth Secret): a dry run through the apiserver and the webhook. */
  accepted(key: string): Promise<void>;
  /** The API's Service (ClusterIP, port 80): from the host as from any pod, through kube-proxy's rules. */
  base: URL;
  agent: Agent;
}

/** `waiting`, failing with the end of kube-proxy's log added: whether it runs and synced is the first question. */
async function withProxyLog<T>(bed: RealNodeBed, waiting: Promise<T>): Promise<T> {
  try {
    return await waiting;
  } catch (error) {
    throw new Error(`${(error as Error).message}\nthe end of kube-proxy's log:\n${logTail(nodePaths(bed.node.dir).kubeProxyLog, 20)}`);
  }
}

/** Builds and imports the images, installs the chart (every Deployment Ready) and, unless told not to, makes an admin key the replicas accept. */
export async function installChart(t: TestLike, options: ChartOptions & { adminKey: false }): Promise<InstalledChart>;
export async function installChart(t: TestLike, options?: ChartOptions & { adminKey?: true }): Promise<InstalledChart & { admin: CreatedKey }>;
export async function installChart(t: TestLike, options: ChartOptions = {}): Promise<InstalledChart> {
  const archives = buildImages(); // before the node: a cold build takes long
  // Spark's images are the node's from its start; the service's, new with every change of the
  // service's code, is imported (a store keyed by it would be made again for each change).
  const sparkImages = [...archives].filter(([name]) => name !== 'service').map(([, archive]) => archive);
  const bed = await startRealNodeBed(t, { enforceNetworkPolicy: options.enforceNetworkPolicy, images: sparkImages });
  for (const archive of archives.values()) await bed.node.importImage(archive);
  const version = serviceVersion();
  const helm = helmOn(bed);
  // The node is the values' one pool, labelled as a platform team labels its nodes (README, "Placement").
  if (options.nodePool) await labelPoolNode(bed.core, buildRules({ nodePools: [NODE_POOL], namespace: APPS }).placement.instanceTypeLabel);
  await bed.core.createNamespace({ body: { metadata: { name: NS, labels: { 'pod-security.kubernetes.io/enforce': 'restricted', 'pod-security.kubernetes.io/enforce-version': 'latest' } } } });
  await options.prepare?.(bed);
  const given = options.values ?? {};
  // Values as a platform team writes them for its registry (JSON is YAML).
  const values = join(bed.dir, 'values.yaml');
  writeFileSync(values, JSON.stringify({
    ...imageValues(version),
    ...(options.nodePool ? { nodePools: [NODE_POOL] } : {}),
    ...given,
    notebookService: { kernelImage: KERNEL_IMAGE, ...(given.notebookService as object | undefined) },
  }, null, 2));
  const installStart = Date.now();
  // --wait: helm returns once every Deployment has its pods Ready.
  await helm(['install', RELEASE, chartDir, '--namespace', NS, '--values', values, '--wait', '--timeout', '15m']);
  const installSeconds = (Date.now() - installStart) / 1000;

  const keys = new SecretKeyStore({ kc: bed.kc, core: bed.core, namespace: NS, name: AUTH_SECRET });
  const service = await bed.core.readNamespacedService({ name: 'submission-service', namespace: NS });
  const base = new URL(`http://${service.spec!.clusterIP}:80`);
  const agent = new Agent({ keepAlive: true, maxSockets: options.agentSockets ?? 4 });
  t.teardown(() => agent.destroy());
  // Each probe on a connection of its own (agent false): a ClusterIP without kube-proxy's rules
  // yet goes out by the default route, and a kept-alive socket to whatever answered there
  // would stay with it after the rules are written.
  await withProxyLog(bed, eventually(() => send(false, base, 'GET', '/healthz', ''), (r) => r.status === 200,
    { what: `the API through its Service (${base.host}: kube-proxy's rules)`, timeoutMs: 120_000 }));
  const accepted = async (key: string) => {
    await withProxyLog(bed, eventually(() => post(false, base, '/api/apps/?dryRun=true', key, { jobName: 'probe' }), (r) => r.status === 200,
      { what: 'a new key to be accepted (a dry run: through the apiserver and the webhook)', timeoutMs: 120_000 }));
  };
  const admin = options.adminKey === false ? undefined : await keys.create('admin', 'chart test');
  if (admin) await accepted(admin.key);
  return { bed, version, values, helm, kubectl: kubectlOn(bed), installSeconds, keys, admin, accepted, base, agent };
}
