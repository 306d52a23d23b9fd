// The real node ready for Spark (issue 24, item 5): what `testbed up --real-node` and the tests
// on the real node (test/helpers/spark-node.ts) both do, so that the README's pi.py runs as
// written for every offered version. The node is described as one node pool and labelled as
// its pool's node (a platform team labels its nodes so); the Spark runtime image of every
// offered version is built by images/build.sh (cached by its inputs, so by version) and
// imported into the node's containerd, and the rules name those images.
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CoreV1Api } from '@kubernetes/client-node';
import type { NodePool } from '../schemas/index.js';
import { DEFAULT_ENGINE_VERSIONS } from '../domain/engine-versions.js';
import type { AdmissionRules } from '../domain/index.js';
import { NODE_NAME } from './real-node.js';

const buildScript = join(import.meta.dirname, '..', 'images', 'build.sh');

/** This machine as one pool: 2 cores; maxima so that a driver and two executors fit together. */
export const REAL_NODE_POOL: NodePool = {
  cloudProvider: 'testbed', instanceName: NODE_NAME, cpu: 2, memoryMib: 8192, preemptible: false,
  maximumSchedulableCoreRequest: 1.2, maximumSchedulableMemoryRequestMib: 2048,
};

/** The name images/build.sh tags a version's Spark runtime image with (test/images/images.test.ts checks it). */
export const sparkRuntimeImage = (version: string): string => `localhost/submission-service/spark:${version}`;

/**
 * Which version a line of images/build.sh's output is the runtime image of (pure): the first of
 * `versions` keeps the plain name `spark-runtime`, the others are `spark-runtime-VERSION`.
 */
export function runtimeArchiveVersion(name: string, versions: readonly string[]): string | undefined {
  if (name === 'spark-runtime') return versions[0];
  const version = /^spark-runtime-(\d+\.\d+\.\d+)$/.exec(name)?.[1];
  return version && versions.includes(version) ? version : undefined;
}

/**
 * The Spark runtime images' OCI archives by version, from images/build.sh (a cold build takes
 * tens of minutes; a warm one a second). Asynchronous: a test's webhook answers from this process.
 * build.sh is always given its own first version (3.5.7) first: an archive's name depends on
 * its place in that list, and another name would be another (cold) build of the same image.
 */
export function sparkRuntimeArchives(versions: readonly string[] = DEFAULT_ENGINE_VERSIONS): Promise<Map<string, string>> {
  const ordered = [...new Set([DEFAULT_ENGINE_VERSIONS[0]!, ...versions])];
  return new Promise((ok, fail) => {
    const child = spawn('bash', [buildScript], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, IMAGES_ONLY: 'spark-runtime', SPARK_VERSIONS: ordered.join(' ') },
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
    child.once('error', fail);
    child.once('exit', (code) => {
      const archives = new Map<string, string>();
      for (const [name, file] of out.trim().split('\n').map((line) => line.split(' '))) {
        const version = name && runtimeArchiveVersion(name, ordered);
        if (version && file && versions.includes(version)) archives.set(version, file);
      }
      const missing = versions.filter((v) => !archives.has(v));
      if (code !== 0 || missing.length > 0) fail(new Error(`images/build.sh (exit ${code}) named no runtime image for ${missing.join(', ') || '?'}: ${out}`));
      else ok(archives);
    });
  });
}

/** The node is the pool's one node, as a platform team labels its nodes (README, "Placement"). */
export async function labelPoolNode(core: CoreV1Api, instanceTypeLabel: string, instanceName = REAL_NODE_POOL.instanceName): Promise<void> {
  for (let attempt = 0; ; attempt++) { // the kubelet writes its Node meanwhile: retry on a conflict
    const node = await core.readNode({ name: NODE_NAME });
    node.metadata!.labels = { ...node.metadata!.labels, [instanceTypeLabel]: instanceName };
    try {
      await core.replaceNode({ name: NODE_NAME, body: node });
      return;
    } catch (error) {
      if ((error as { code?: number }).code !== 409 || attempt >= 10) throw error;
    }
  }
}

interface PoolsFile { nodePools?: NodePool[]; images?: Record<string, string>; engineVersions?: string[]; [key: string]: unknown }

/**
 * The node-pool file the real node's API and webhook read (pure): the given one, else this
 * node as its one pool; every offered version without an image of the file's own gets the
 * locally built one (the default `apache/spark:X` cannot be pulled here).
 */
export function realNodePools(given: PoolsFile | undefined): PoolsFile {
  const file = given ?? { nodePools: [REAL_NODE_POOL] };
  const versions = file.engineVersions?.length ? file.engineVersions : DEFAULT_ENGINE_VERSIONS;
  const images = Object.fromEntries(versions.map((v) => [v, sparkRuntimeImage(v)]));
  return { ...file, images: { ...images, ...file.images } };
}

/** Writes realNodePools of `given` (a file, or none) to DIR/real-node-pools.json; returns its path. */
export function writeRealNodePools(dir: string, given: string | undefined): string {
  const path = join(dir, 'real-node-pools.json');
  writeFileSync(path, JSON.stringify(realNodePools(given ? JSON.parse(readFileSync(given, 'utf8')) as PoolsFile : undefined), null, 2));
  return path;
}

/** The versions whose image is one images/build.sh makes (localhost/submission-service/spark:X). */
export const locallyBuilt = (images: Record<string, string>, versions: readonly string[]): string[] =>
  versions.filter((v) => images[v] === sparkRuntimeImage(v));

/**
 * The node ready for Spark: the runtime image of every version `rules` names a locally built
 * image for, built (cached) and imported into the node's containerd; the node labelled as the
 * smallest pool's node. Says what it does and how long each step took (a cold build is long).
 */
export async function readyNodeForSpark(node: { importImage(file: string): Promise<void> }, core: CoreV1Api, rules: AdmissionRules,
  say: (line: string) => void = (line) => void process.stderr.write(`${line}\n`)): Promise<void> {
  const versions = locallyBuilt(rules.images, rules.engineVersions);
  let started = Date.now();
  const archives = versions.length > 0 ? await sparkRuntimeArchives(versions) : new Map<string, string>();
  say(`Spark runtime images ${versions.join(', ') || '(none to build)'} ready in ${Math.round((Date.now() - started) / 1000)} s (images/build.sh, cached by version)`);
  for (const [version, archive] of archives) {
    started = Date.now();
    await node.importImage(archive);
    say(`imported ${sparkRuntimeImage(version)} into the node in ${Math.round((Date.now() - started) / 1000)} s`);
  }
  await labelPoolNode(core, rules.placement.instanceTypeLabel, rules.pools[0]!.instanceName);
}
