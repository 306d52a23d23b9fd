// The real control plane of `testbed up` (testbed/cli.ts) for the Kubernetes benchmarks
// and test/spark-parity: start it in a directory, reach it with client-node, and run the
// real spark-submit (cluster deploy mode) against it. Everything started here is stopped
// by `down()`.
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { testbedBinary as buildTestbed } from '../../testbed/control-plane.js';
import { testbedArgs } from '../../testbed/entry.js';
import { sparkEnv } from '../../test/helpers/service.js';
import { load } from '../lib.js';

const run = promisify(execFile);

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const NODE_POOLS = resolve(ROOT, 'examples', 'example-cluster.json');
export const NAMESPACE = 'spark-apps';
export const SPARK_IMAGE = 'apache/spark:3.5.7';

/** The test bed binary: $SUBMISSION_SERVICE_TESTBED, or test/cluster/build.sh's (cached) output. */
export const testbedBinary = async (): Promise<string> => buildTestbed();

/** What is missing to run against the test bed and real Spark, or undefined when all is there. */
export function missingPrerequisite(): string | undefined {
  if (!existsSync(NODE_POOLS)) return `no node pools file at ${NODE_POOLS}`;
  if (!sparkSubmitPath()) return 'no Spark virtualenv (scripts/setup.sh makes one; source the env file scripts/setup.sh prints)';
  return undefined;
}

export function sparkSubmitPath(): string | undefined {
  const venv = sparkEnv().SUBMISSION_SERVICE_PYTHON_ENV;
  const path = venv ? join(venv, 'bin', 'spark-submit') : undefined;
  return path && existsSync(path) ? path : undefined;
}

/** How spark-submit's fabric8 client authenticates against the test bed: files it reads. */
export interface SubmissionAuth {
  caCertFile: string;
  /** The test bed's bearer token (system:masters), when it wrote one next to the kubeconfig. */
  oauthTokenFile?: string;
  clientCertFile?: string;
  clientKeyFile?: string;
}

export interface Testbed {
  dir: string;
  baseUrl: string;
  kubeconfig: string;
  /** The kube-apiserver URL, e.g. https://127.0.0.1:34215. */
  server: string;
  kc: KubeConfig;
  core: CoreV1Api;
  auth: SubmissionAuth;
  down(): Promise<void>;
}

/**
 * Writes the kubeconfig's CA (and client certificate and key) into files, as fabric8 wants
 * them. The test bed's client key is ECDSA, which the fabric8 6.7.2 bundled with Spark 3.5.7
 * cannot read ("Invalid DER: object is not integer"); its bearer token (file `token` next
 * to the kubeconfig) is used instead when present.
 */
export function submissionAuth(kubeconfig: string, outDir: string): SubmissionAuth {
  mkdirSync(outDir, { recursive: true });
  const text = readFileSync(kubeconfig, 'utf8');
  const field = (name: string) => new RegExp(`${name}:\\s*(\\S+)`).exec(text)?.[1];
  const write = (name: string, base64: string | undefined) => {
    if (!base64) return undefined;
    const path = join(outDir, name);
    writeFileSync(path, Buffer.from(base64, 'base64'), { mode: 0o600 });
    return path;
  };
  const caCertFile = write('ca.crt', field('certificate-authority-data'));
  if (!caCertFile) throw new Error(`${kubeconfig} has no certificate-authority-data`);
  const token = join(dirname(kubeconfig), 'token');
  if (existsSync(token)) return { caCertFile, oauthTokenFile: token };
  return { caCertFile, clientCertFile: write('client.crt', field('client-certificate-data')), clientKeyFile: write('client.key', field('client-key-data')) };
}

/**
 * `testbed up` in dir (etcd, kube-apiserver, our webhook, our API, the notebook gateway); `runPods`:
 * with the FakeKubelet TEST DOUBLE running driver pods (with the spark-submit that setup's env names).
 */
export async function clusterUp(dir: string, options: { nodes?: boolean; runPods?: boolean } = {}): Promise<Testbed> {
  const binary = await testbedBinary();
  const env = { ...process.env, SUBMISSION_SERVICE_TESTBED: binary, LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn' };
  const args = testbedArgs(['up', '--node-pools', NODE_POOLS, '--dir', dir, ...(options.nodes ? ['--nodes'] : []), ...(options.runPods ? ['--run-pods'] : [])]);
  const down = async () => { await run(process.execPath, testbedArgs(['down', '--dir', dir]), { env }).catch(() => undefined); };
  let stdout: string;
  try {
    ({ stdout } = await run(process.execPath, args, { env, timeout: 10 * 60_000 }));
  } catch (error) {
    await down();
    throw error;
  }
  const baseUrl = /BASE_URL=(\S+)/.exec(stdout)?.[1];
  const kubeconfig = /KUBECONFIG=(\S+)/.exec(stdout)?.[1];
  if (!baseUrl || !kubeconfig) { await down(); throw new Error(`testbed up printed no BASE_URL/KUBECONFIG:\n${stdout}`); }
  return testbedAt(dir, baseUrl, kubeconfig, down);
}

function testbedAt(dir: string, baseUrl: string, kubeconfig: string, down: () => Promise<void>): Testbed {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  return {
    dir, baseUrl, kubeconfig, kc,
    server: kc.getCurrentCluster()!.server,
    core: kc.makeApiClient(CoreV1Api),
    auth: submissionAuth(kubeconfig, join(dir, 'submission-auth')),
    down,
  };
}

/**
 * BENCH_TESTBED_DIR: the directory of a `testbed up` (no flags but --node-pools NODE_POOLS)
 * already running, which the benches share instead of booting one each: the smoke test's
 * (test/helpers/bench-smoke.ts), whose tiny counts spent most of their time booting beds. Its
 * owner stops it. Unset (every full run): each bench has a bed of its own, as before.
 */
export const SHARED_TESTBED_DIR = process.env.BENCH_TESTBED_DIR || undefined;

/** The shared bed's state as `testbed up` wrote it (testbed/serve.ts's ServeState). */
export function sharedTestbed(dir: string): Testbed {
  const state = JSON.parse(readFileSync(join(dir, 'state.json'), 'utf8')) as { baseUrl: string; kubeconfig: string };
  return testbedAt(dir, state.baseUrl, state.kubeconfig, async () => undefined);
}

export interface SparkApp {
  /** e.g. local:///opt/spark/examples/src/main/python/pi.py */
  file: string;
  arguments?: string[];
  mainClass?: string;
}

export const PI_PY: SparkApp = { file: 'local:///opt/spark/examples/src/main/python/pi.py', arguments: ['10'] };

/** The command line of `spark-submit --deploy-mode cluster` that creates a driver pod and returns. */
export function sparkSubmitArgs(tb: Pick<Testbed, 'server' | 'auth'>, name: string, app: SparkApp, conf: Record<string, string> = {}): string[] {
  const all: Record<string, string> = {
    'spark.kubernetes.namespace': NAMESPACE,
    'spark.kubernetes.container.image': SPARK_IMAGE,
    'spark.kubernetes.submission.waitAppCompletion': 'false',
    'spark.kubernetes.authenticate.submission.caCertFile': tb.auth.caCertFile,
    ...(tb.auth.oauthTokenFile ? { 'spark.kubernetes.authenticate.submission.oauthTokenFile': tb.auth.oauthTokenFile } : {}),
    ...(tb.auth.clientCertFile ? { 'spark.kubernetes.authenticate.submission.clientCertFile': tb.auth.clientCertFile } : {}),
    ...(tb.auth.clientKeyFile ? { 'spark.kubernetes.authenticate.submission.clientKeyFile': tb.auth.clientKeyFile } : {}),
    ...conf,
  };
  const args = ['--master', `k8s://${tb.server}`, '--deploy-mode', 'cluster', '--name', name];
  for (const [key, value] of Object.entries(all)) args.push('--conf', `${key}=${value}`);
  if (app.mainClass) args.push('--class', app.mainClass);
  return [...args, app.file, ...(app.arguments ?? [])];
}

export interface SparkSubmitRun { ms: number; code: number | null; output: string }

/** One spark-submit (a new JVM, as a user runs it); resolves when it exits. */
export function runSparkSubmit(args: string[], timeoutMs = 180_000): Promise<SparkSubmitRun> {
  const bin = sparkSubmitPath();
  if (!bin) return Promise.reject(new Error('no spark-submit (source the env file scripts/setup.sh prints)'));
  // No ambient kubeconfig: fabric8 would auto-configure from it before our --conf settings.
  const env = { ...sparkEnv(), KUBECONFIG: join(tmpdir(), 'no-such-kubeconfig') };
  const started = performance.now();
  return new Promise((ok, fail) => {
    const child = spawn(bin, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => { output += chunk; });
    child.stderr.on('data', (chunk) => { output += chunk; });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', (error) => { clearTimeout(timer); fail(error); });
    child.once('exit', (code) => { clearTimeout(timer); ok({ ms: performance.now() - started, code, output }); });
  });
}

/** Deletes every pod (and what spark-submit made: ConfigMaps, Services) in the namespace, and waits until they are gone. */
export async function deleteAllPods(core: CoreV1Api, namespace = NAMESPACE): Promise<void> {
  await core.deleteCollectionNamespacedPod({ namespace, gracePeriodSeconds: 0 });
  await core.deleteCollectionNamespacedConfigMap({ namespace, labelSelector: undefined, fieldSelector: 'metadata.name!=kube-root-ca.crt' }).catch(() => undefined);
  const services = await core.listNamespacedService({ namespace });
  for (const svc of services.items) await core.deleteNamespacedService({ name: svc.metadata!.name!, namespace }).catch(() => undefined);
  for (let i = 0; i < 300; i++) {
    const left = await core.listNamespacedPod({ namespace, limit: 1 });
    if (left.items.length === 0) return;
    await new Promise((ok) => setTimeout(ok, 100));
  }
}

/**
 * One benchmark's life on a fresh `testbed up` (or the shared one: SHARED_TESTBED_DIR): prerequisites
 * checked (exit 2 when missing, unless `allowMissing` accepts the reason), a temp dir, teardown on
 * SIGINT and at the end.
 */
export async function withClusterUp(name: string, run: (tb: Testbed) => Promise<void>, allowMissing: (reason: string) => boolean = () => false): Promise<void> {
  const missing = missingPrerequisite();
  if (missing && !allowMissing(missing)) { process.stderr.write(`bench/kubernetes/${name}: ${missing}\n`); process.exit(2); }
  if (SHARED_TESTBED_DIR) {
    process.stderr.write(`on the shared test bed in ${SHARED_TESTBED_DIR} (load ${load()})\n`);
    await run(sharedTestbed(SHARED_TESTBED_DIR));
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), `bench-k8s-${name}-`));
  let tb: Testbed | undefined;
  const stop = async () => { await tb?.down(); rmSync(dir, { recursive: true, force: true }); };
  process.once('SIGINT', () => void stop().then(() => process.exit(130)));
  try {
    process.stderr.write(`testbed up in ${dir} (load ${load()})\n`);
    tb = await clusterUp(join(dir, 'cluster'));
    await run(tb);
  } finally {
    await stop();
  }
}
