// Start latency on the test bed's real node (testbed/real-node.ts) with the Spark runtime image
// this repository builds: `POST /api/apps/` of pi.py -> driver pod Running and -> first executor
// pod Running, beside the node's own bare pod start (the test image, create -> Running) and
// `spark-submit --deploy-mode cluster` of the same pi.py on the same node (start of the JVM ->
// its driver pod Running) and the closest peer, the Kubeflow Spark Operator v2.5.x built from
// its Go module (spark-operator/: `SparkApplication` create -> its driver pod Running). One
// application at a time: the node has two cores, a driver and an executor take most of them.
// The two slow columns take a JVM start each, so they run on every APPS/SLOW-th round only.
// Needs root and the lock the real-node tests take:
//
//   flock /tmp/real-node.lock node --import tsx bench/kubernetes/real-node-start.ts
//   env: REAL_NODE_APPS (50: bare pods and ours), REAL_NODE_SLOW (10: spark-submit and the
//        operator), REAL_NODE_OPERATOR=0 (leave the operator out), SUBMISSION_SERVICE_NODE /
//        _TESTBED (skip the builds)
//
// Goal (issue 16): driver Running p99 <= 2 s above the bare pod start; >= 10x faster than spark-submit.
import type { V1Pod } from '@kubernetes/client-node';
import { register as metrics } from 'prom-client';
import { envNumber, fmt, load, percentileSorted, table } from '../lib.js';
import { runSparkSubmit, sparkSubmitArgs, submissionAuth } from './testbed.js';
import { sample } from '../../test/helpers/metrics.js';
import { PI_PY, SPARK_RUNTIME_IMAGE, sparkNodeUnavailable, startSparkNodeBed } from '../../test/helpers/spark-node.js';
import { TEST_IMAGE } from '../../testbed/node-config.js';
import { LABEL_APP, SPARK_ROLE } from '../../domain/index.js';
import { join } from 'node:path';
import { buildOperator, sparkApplication, sparkApplications, startOperator } from './spark-operator/operator.js';

const APPS = envNumber('REAL_NODE_APPS', 50);
const SLOW = Math.min(APPS, envNumber('REAL_NODE_SLOW', 10));
const WITH_OPERATOR = process.env.REAL_NODE_OPERATOR !== '0';
const POLL_MS = 25;

async function until<T>(read: () => Promise<T>, ok: (value: T) => boolean, what: string, timeoutMs = 600_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read().catch(() => undefined);
    if (value !== undefined && ok(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((done) => setTimeout(done, POLL_MS));
  }
}

const isRunning = (pod: V1Pod | undefined) => pod?.status?.phase === 'Running';
/** The in-process controller's config copies (its writes, kind="config", every outcome): 0 when the API has the webhook's rules. */
const configCopies = async () => sample(await metrics.metrics(), 'submission_service_controller_writes_total', { kind: 'config' });

const stats = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return [fmt(percentileSorted(sorted, 50)), fmt(percentileSorted(sorted, 99)), fmt(sorted.at(-1) ?? NaN)];
};

// eslint-disable-next-line max-lines-per-function -- one run on the real node (minutes to set up), read top to bottom
async function main(): Promise<void> {
  const unavailable = sparkNodeUnavailable();
  if (unavailable) throw new Error(unavailable);
  const operatorDir = WITH_OPERATOR ? buildOperator() : undefined; // before the node: cold, minutes
  const teardowns: (() => unknown)[] = [];
  const bed = await startSparkNodeBed({ teardown: (fn) => teardowns.push(fn) });
  const { core, namespace } = bed;
  const auth = submissionAuth(bed.testbed.kubeconfig, join(bed.dir, 'submission-auth'));
  const operator = operatorDir
    ? await startOperator({ dir: operatorDir, kubeconfig: bed.testbed.kubeconfig, server: bed.testbed.server, namespace })
    : undefined;
  if (operator) teardowns.push(() => operator.stop());
  const applications = sparkApplications(bed.kc, namespace);
  const podsOf = async (selector: string) => (await core.listNamespacedPod({ namespace, labelSelector: selector })).items;
  const gone = (selector: string) => until(() => podsOf(selector), (list) => list.length === 0, `pods ${selector} to go`);
  const bare: number[] = [];
  const driver: number[] = [];
  const executor: number[] = [];
  const submit: number[] = [];
  const peer: number[] = [];
  let copies = NaN;
  try {
    for (let i = 0; i < APPS; i++) {
      // The node's own start: a pod of the small test image, create -> Running.
      const name = `bare-${i}`;
      let started = performance.now();
      await core.createNamespacedPod({ namespace, body: { metadata: { name, labels: { bench: 'bare' } }, spec: { terminationGracePeriodSeconds: 0, containers: [{ name: 'main', image: TEST_IMAGE, imagePullPolicy: 'IfNotPresent', args: ['serve', '8080'] }] } } });
      await until(() => core.readNamespacedPod({ name, namespace }), isRunning, `${name} Running`);
      bare.push(performance.now() - started);
      await core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 });

      // Ours: POST -> driver Running -> first executor Running; then the application goes.
      started = performance.now();
      const res = await bed.call('POST', '/api/apps/', { jobName: 'bench', configOverrides: { type: 'Python', mainApplicationFile: PI_PY, arguments: ['200'], executor: { cores: 1, instances: 1 } } });
      if (res.status !== 201) throw new Error(`POST: ${res.status} ${res.body}`);
      const appName = (res.json as { appName: string }).appName;
      await until(() => core.readNamespacedPod({ name: appName, namespace }), isRunning, `${appName} Running`);
      driver.push(performance.now() - started);
      await until(() => podsOf(`${SPARK_ROLE}=executor,${LABEL_APP}=${appName}`), (list) => list.some(isRunning), `an executor of ${appName} Running`);
      executor.push(performance.now() - started);
      await bed.call('DELETE', `/api/apps/${appName}`);
      await gone(`${LABEL_APP}=${appName}`);

      if (i % Math.ceil(APPS / SLOW) !== 0) {
        process.stderr.write(`run ${i + 1}/${APPS}: bare ${fmt(bare.at(-1)!)} ms, driver ${fmt(driver.at(-1)!)} ms, executor ${fmt(executor.at(-1)!)} ms (load ${load()})\n`);
        continue;
      }
      // spark-submit --deploy-mode cluster of the same pi.py, a JVM per submission as users run it.
      const sparkName = `bench-spark-${i}`;
      started = performance.now();
      const args = sparkSubmitArgs({ server: bed.testbed.server, auth }, sparkName, { file: PI_PY, arguments: ['200'] }, {
        'spark.kubernetes.container.image': SPARK_RUNTIME_IMAGE,
        'spark.kubernetes.authenticate.driver.serviceAccountName': bed.rules.serviceAccount,
        'spark.kubernetes.driver.request.cores': '460m', 'spark.kubernetes.executor.request.cores': '600m',
        'spark.driver.memory': '1024m', 'spark.executor.memory': '1024m', 'spark.executor.instances': '1',
      });
      const run = await runSparkSubmit(args);
      if (run.code !== 0) throw new Error(`spark-submit exited ${run.code}: ${run.output.slice(-2_000)}`);
      await until(() => podsOf(`spark-app-name=${sparkName},${SPARK_ROLE}=driver`), (list) => list.some(isRunning), `${sparkName}'s driver Running`);
      submit.push(performance.now() - started);
      await core.deleteCollectionNamespacedPod({ namespace, labelSelector: `spark-app-name=${sparkName}`, gracePeriodSeconds: 0 });
      await gone(`spark-app-name=${sparkName}`);

      // The peer: a SparkApplication of the same pi.py; its controller runs spark-submit for it.
      if (operator) {
        const peerName = `bench-operator-${i}`;
        const selector = `sparkoperator.k8s.io/app-name=${peerName},${SPARK_ROLE}=driver`;
        started = performance.now();
        await applications.create(sparkApplication(peerName, { namespace, image: SPARK_RUNTIME_IMAGE, file: PI_PY, arguments: ['200'], serviceAccount: bed.rules.serviceAccount, auth }));
        await until(() => podsOf(selector), (list) => list.some(isRunning), `${peerName}'s driver Running`);
        peer.push(performance.now() - started);
        await applications.delete(peerName);
        await core.deleteCollectionNamespacedPod({ namespace, labelSelector: `sparkoperator.k8s.io/app-name=${peerName}`, gracePeriodSeconds: 0 });
        await gone(`sparkoperator.k8s.io/app-name=${peerName}`);
      }
      process.stderr.write(`run ${i + 1}/${APPS}: bare ${fmt(bare.at(-1)!)} ms, driver ${fmt(driver.at(-1)!)} ms, executor ${fmt(executor.at(-1)!)} ms, spark-submit driver ${fmt(submit.at(-1)!)} ms${operator ? `, operator driver ${fmt(peer.at(-1)!)} ms` : ''} (load ${load()})\n`);
    }
  } finally {
    copies = await configCopies().catch(() => NaN);
    for (const fn of teardowns.reverse()) await fn();
  }
  process.stdout.write(`${table(['start (ms)', 'p50', 'p99', 'max'], [
    ['bare pod (test image): create -> Running', ...stats(bare)],
    ['POST /api/apps/ -> driver Running', ...stats(driver)],
    ['POST /api/apps/ -> first executor Running', ...stats(executor)],
    ['spark-submit --deploy-mode cluster -> driver Running', ...stats(submit)],
    ...(operator ? [['Spark Operator v2.5.1: SparkApplication -> driver Running', ...stats(peer)]] : []),
  ])}\n${APPS} bare pods and applications, ${submit.length} of each slow one, one at a time, load ${load()}; `
    + `config copies by the controller: ${copies} (the Application is written with its admitted config)\n`);
}

await main();
