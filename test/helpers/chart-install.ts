// The Helm chart installed onto the test bed's real node as a platform team installs it: the
// images this repository builds (images/build.sh, cached) imported into the node's containerd,
// the release namespace enforcing the `restricted` Pod Security Standard, values naming those
// images, `helm install --wait`. The node is labelled as the one node of the one pool the
// values declare, so that admitted Spark pods are placed on it.
import { execFile, execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { buildRules } from '../../webhook/domain/index.js';
import { chartDir, helmBinary } from '../manifests/helm.js';
import { repoRoot } from './api.js';
import type { RealNodeBed } from './real-node.js';
import { labelPoolNode, NODE_POOL, SPARK_RUNTIME_IMAGE } from './spark-node.js';

export const RELEASE = 'ss';
export const RELEASE_NAMESPACE = 'submission-service';
export const APPS_NAMESPACE = 'spark-apps';
export const KERNEL_IMAGE = 'localhost/submission-service/kernel:3.5.7';

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

/** `helm ARGS --kubeconfig …`, asynchronous: the test's event loop keeps running meanwhile. */
export function helmOn(bed: RealNodeBed): (args: string[]) => Promise<string> {
  return async (args) => (await promisify(execFile)(helmBinary(), [...args, '--kubeconfig', bed.testbed.kubeconfig], { encoding: 'utf8' })).stdout;
}

/** `kubectl ARGS` against the test bed, asynchronous like helmOn. */
export function kubectlOn(bed: RealNodeBed): (args: string[]) => Promise<string> {
  return async (args) => (await promisify(execFile)('kubectl', ['--kubeconfig', bed.testbed.kubeconfig, ...args], { encoding: 'utf8', maxBuffer: 1 << 22 })).stdout;
}

/**
 * Imports the images, labels the node, creates the release namespace (restricted) and runs
 * `helm install --wait` with values naming the built images and the node's pool; `values`
 * are merged over those. Resolves once every Deployment has its pods Ready.
 */
export async function installChart(bed: RealNodeBed, archives: Map<string, string>, values: Record<string, unknown> = {}): Promise<void> {
  for (const archive of archives.values()) await bed.node.importImage(archive);
  // The node is the values' one pool, labelled as a platform team labels its nodes (README, "Placement").
  await labelPoolNode(bed.core, buildRules({ nodePools: [NODE_POOL], namespace: APPS_NAMESPACE }).placement.instanceTypeLabel);
  const file = join(bed.dir, 'values.yaml');
  // Values as a platform team writes them for its registry (JSON is YAML).
  writeFileSync(file, JSON.stringify({
    ...imageValues(serviceVersion()),
    nodePools: [NODE_POOL],
    ...values,
    notebookService: { kernelImage: KERNEL_IMAGE, ...(values.notebookService as object | undefined) },
  }, null, 2));
  await bed.core.createNamespace({ body: { metadata: { name: RELEASE_NAMESPACE, labels: { 'pod-security.kubernetes.io/enforce': 'restricted', 'pod-security.kubernetes.io/enforce-version': 'latest' } } } });
  await helmOn(bed)(['install', RELEASE, chartDir, '--namespace', RELEASE_NAMESPACE, '--values', file, '--wait', '--timeout', '15m']);
}
