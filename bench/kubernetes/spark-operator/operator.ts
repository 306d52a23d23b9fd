// The Kubeflow Spark Operator (v2.5.x, built from its Go module by ./build.sh) run beside the
// test bed, as the peer in issue 16's start race. It runs outside the cluster with the test
// bed's admin kubeconfig: its controller watches `SparkApplication`s in one namespace and, for
// each, runs spark-submit (the same pyspark distribution our spark-submit column runs) with
// `--deploy-mode cluster`, as it does in its own pod. Its admission webhook is not started:
// the race needs no pod mutation of its own (our webhook admits its pods as it admits every
// Spark pod), and leaving it out only makes the peer faster.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ApiextensionsV1Api, CustomObjectsApi, KubeConfig, loadYaml, type V1CustomResourceDefinition } from '@kubernetes/client-node';
import { freePort } from '../../../lib/free-port.js';
import { sparkEnv } from '../../../test/helpers/service.js';
import type { SubmissionAuth } from '../testbed.js';

export const OPERATOR_GROUP = 'sparkoperator.k8s.io';
export const OPERATOR_VERSION = 'v1beta2';

/** ./build.sh's folder (the binary and its CRDs): built once per version, then cached. */
export function buildOperator(): string {
  const out = execFileSync('bash', [join(dirname(new URL(import.meta.url).pathname), 'build.sh')],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 40 * 60_000 });
  return out.trim().split('\n').at(-1)!;
}

export interface RunningOperator { pid: number; stop(): Promise<void> }

/**
 * Installs its CRDs, starts the controller, resolves once it reports ready. `sparkHome`: where its
 * bin/spark-submit is (default: the Spark virtualenv's pyspark distribution).
 */
export async function startOperator(options: { dir: string; kubeconfig: string; server: string; namespace: string; sparkHome?: string }): Promise<RunningOperator> {
  const kc = new KubeConfig();
  kc.loadFromFile(options.kubeconfig);
  const extensions = kc.makeApiClient(ApiextensionsV1Api);
  // All of its CRDs: its manager maps every kind it owns at start.
  for (const file of readdirSync(join(options.dir, 'crds'))) {
    const crd = loadYaml<V1CustomResourceDefinition>(readFileSync(join(options.dir, 'crds', file), 'utf8'));
    await extensions.createCustomResourceDefinition({ body: crd }).catch((error: { code?: number }) => { if (error.code !== 409) throw error; });
    for (;;) { // Established before the controller's informers list it
      const got = await extensions.readCustomResourceDefinition({ name: crd.metadata!.name! });
      if (got.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) break;
      await new Promise((done) => setTimeout(done, 100));
    }
  }
  const venv = sparkEnv().SUBMISSION_SERVICE_PYTHON_ENV;
  // The pip package's Spark distribution (bin/spark-submit beside jars/), as SPARK_HOME wants it.
  const sparkHome = options.sparkHome ?? (venv && execFileSync(join(venv, 'bin', 'python'), ['-c', 'import pyspark, os; print(os.path.dirname(pyspark.__file__))'], { encoding: 'utf8' }).trim());
  if (!sparkHome) throw new Error('no Spark virtualenv (source the env file scripts/setup.sh prints)');
  const server = new URL(options.server);
  const probePort = await freePort();
  const child: ChildProcess = spawn(join(options.dir, 'spark-operator'), [
    'controller', 'start', '--kubeconfig', options.kubeconfig, `--namespaces=${options.namespace}`,
    '--enable-ui-service=false', '--leader-election=false', `--health-probe-bind-address=127.0.0.1:${probePort}`,
    '--metrics-bind-address=0', '--zap-log-level=error',
  ], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: {
      ...sparkEnv(),
      // Where its spark-submit is, and the master URL it builds (k8s://https://HOST:PORT).
      SPARK_HOME: sparkHome,
      KUBERNETES_SERVICE_HOST: server.hostname, KUBERNETES_SERVICE_PORT: server.port || '443',
      // No ambient kubeconfig for spark-submit: the application's sparkConf carries its credentials.
      KUBECONFIG: join(tmpdir(), 'no-such-kubeconfig'),
    },
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => { stderr = (stderr + chunk.toString()).slice(-4_000); });
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  const stop = async () => { if (child.exitCode === null) { child.kill('SIGTERM'); await exited; } };
  for (const deadline = Date.now() + 120_000; ;) { // ready: its informers synced
    if (child.exitCode !== null) throw new Error(`spark-operator exited ${child.exitCode}: ${stderr}`);
    const ready = await fetch(`http://127.0.0.1:${probePort}/readyz`).then((res) => res.ok, () => false);
    if (ready) return { pid: child.pid!, stop };
    if (Date.now() > deadline) { await stop(); throw new Error(`spark-operator not ready in 120 s: ${stderr}`); }
    await new Promise((done) => setTimeout(done, 100));
  }
}

/** A SparkApplication of a Python file in cluster mode, with spark-submit's credentials. */
export function sparkApplication(name: string, options: {
  namespace: string; image: string; file: string; arguments: string[]; serviceAccount: string; auth: SubmissionAuth;
}) {
  const auth = options.auth;
  return {
    apiVersion: `${OPERATOR_GROUP}/${OPERATOR_VERSION}`, kind: 'SparkApplication',
    metadata: { name, namespace: options.namespace },
    spec: {
      type: 'Python', mode: 'cluster', sparkVersion: '3.5.7', image: options.image, imagePullPolicy: 'IfNotPresent',
      mainApplicationFile: options.file, arguments: options.arguments,
      restartPolicy: { type: 'Never' },
      driver: { cores: 1, coreRequest: '460m', memory: '1024m', serviceAccount: options.serviceAccount },
      executor: { instances: 1, cores: 1, coreRequest: '600m', memory: '1024m' },
      sparkConf: {
        'spark.kubernetes.authenticate.submission.caCertFile': auth.caCertFile,
        ...(auth.oauthTokenFile ? { 'spark.kubernetes.authenticate.submission.oauthTokenFile': auth.oauthTokenFile } : {}),
        ...(auth.clientCertFile ? { 'spark.kubernetes.authenticate.submission.clientCertFile': auth.clientCertFile } : {}),
        ...(auth.clientKeyFile ? { 'spark.kubernetes.authenticate.submission.clientKeyFile': auth.clientKeyFile } : {}),
      },
    },
  };
}

export const sparkApplications = (kc: KubeConfig, namespace: string) => {
  const custom = kc.makeApiClient(CustomObjectsApi);
  const where = { group: OPERATOR_GROUP, version: OPERATOR_VERSION, namespace, plural: 'sparkapplications' };
  return {
    create: (body: object) => custom.createNamespacedCustomObject({ ...where, body }),
    delete: (name: string) => custom.deleteNamespacedCustomObject({ ...where, name }),
  };
};
