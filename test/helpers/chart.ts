// The Helm chart installed on the test bed's real node with the images this repository builds,
// for the tests that use the installed service (chart-install, chart-faults, chart-spark): images built and
// imported, the release namespace enforcing `restricted`, `helm install --wait`, an admin key in
// the auth Secret, and the API reached through its Service's ClusterIP.
import { execFile, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { V1Pod } from '@kubernetes/client-node';
import type { CreatedKey } from '../../submit-api/auth/key-store.js';
import { SecretKeyStore } from '../../submit-api/auth/secret-key-store.js';
import { chartDir, helmBinary } from '../manifests/helm.js';
import { eventually } from './kubernetes.js';
import { buildImages, imageValues, serviceVersion } from './chart-install.js';
import { type RealNodeBed, realNodeUnavailable, startRealNodeBed } from './real-node.js';

export { buildImages, imageValues, serviceVersion };

export const RELEASE = 'ss';
export const NS = 'submission-service';
export const APPS = 'spark-apps';

interface TestLike { teardown(fn: () => unknown): void }

/** Why the chart cannot be installed on a real node here, or false. */
export function chartNodeUnavailable(): string | false {
  const missing = ['mmdebstrap', 'buildah'].filter((tool) => spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0);
  return realNodeUnavailable() ?? (missing.length ? `needs ${missing.join(', ')} (apt-get install mmdebstrap buildah)` : false);
}

export const readyPod = (pod: V1Pod) => pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

export interface Answer { status: number | string; json?: any; text?: string }

/** One request, answered or failed: the status (or the error's code: ECONNRESET, timeout...) and the body. */
export function send(agent: Agent, base: URL, method: string, path: string, key: string, body?: unknown): Promise<Answer> {
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

export const post = (agent: Agent, base: URL, path: string, key: string, body: unknown) => send(agent, base, 'POST', path, key, body);

export interface InstalledChart {
  bed: RealNodeBed;
  version: string;
  /** The values file of the install (JSON is YAML), for upgrades. */
  values: string;
  /** helm with the test bed's kubeconfig; asynchronous, so requests of this process go on meanwhile. */
  helm: (args: string[]) => Promise<string>;
  installSeconds: number;
  admin: CreatedKey;
  keys: SecretKeyStore;
  /** The API's Service (ClusterIP, port 80): from the host as from any pod, through kube-proxy's rules. */
  base: URL;
  agent: Agent;
}

/** Builds and imports the images, installs the chart (every Deployment Ready) and makes an admin key the replicas accept. */
export async function installChart(t: TestLike, extraValues: Record<string, unknown> = {}, agentSockets = 4): Promise<InstalledChart> {
  const archives = buildImages();
  const bed = await startRealNodeBed(t);
  for (const archive of archives.values()) await bed.node.importImage(archive);
  const version = serviceVersion();
  const helm = async (args: string[]) => (await promisify(execFile)(helmBinary(), [...args, '--kubeconfig', bed.testbed.kubeconfig], { encoding: 'utf8' })).stdout;
  // Values as a platform team writes them for its registry.
  const values = join(bed.dir, 'values.yaml');
  writeFileSync(values, JSON.stringify({
    ...imageValues(version),
    notebookService: { kernelImage: 'localhost/submission-service/kernel:3.5.7' },
    ...extraValues,
  }, null, 2));
  // The release namespace enforces `restricted`: every pod of the chart's must meet it.
  await bed.core.createNamespace({ body: { metadata: { name: NS, labels: { 'pod-security.kubernetes.io/enforce': 'restricted', 'pod-security.kubernetes.io/enforce-version': 'latest' } } } });
  const installStart = Date.now();
  // --wait: helm returns once every Deployment has its pods Ready.
  await helm(['install', RELEASE, chartDir, '--namespace', NS, '--values', values, '--wait', '--timeout', '15m']);
  const installSeconds = (Date.now() - installStart) / 1000;

  // As `submission-service keys create --role admin --secret NS/submission-service-auth` makes it.
  const keys = new SecretKeyStore({ kc: bed.kc, core: bed.core, namespace: NS, name: 'submission-service-auth' });
  const admin = await keys.create('admin', 'chart test');
  const service = await bed.core.readNamespacedService({ name: 'submission-service', namespace: NS });
  const base = new URL(`http://${service.spec!.clusterIP}:80`);
  const agent = new Agent({ keepAlive: true, maxSockets: agentSockets });
  t.teardown(() => agent.destroy());
  // The replicas watch the auth Secret: the new key counts within the watch's latency.
  await eventually(() => post(agent, base, '/api/apps/?dryRun=true', admin.key, { jobName: 'probe' }), (r) => r.status === 200, { what: 'the new key to be accepted (a dry run: through the apiserver and the webhook)', timeoutMs: 60_000 });
  return { bed, version, values, helm, installSeconds, admin, keys, base, agent };
}
