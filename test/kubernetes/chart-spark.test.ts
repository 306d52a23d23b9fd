// Runs alone (scripts/test.sh): the real node is one per machine, and the chart's pods, Spark's
// History Server, a driver and an executor (four JVMs) share two cores.
//
// Spark's real cluster mode through the INSTALLED chart (issue 16, item 4): the chart on the
// test bed's real node with the images this repository builds, its history configured against
// the test bed's S3 server. Through the API's Service: a PySpark job submitted with
// POST /api/apps/ runs in a driver container; Spark's driver creates executor pods through the
// apiserver as the chart's driver service account; the chart's webhook sizes and places each;
// executors reach the driver by its DNS name under the chart's one headless drivers' Service
// (no object written per application); a pod claiming that name is refused; the application
// ends COMPLETED, and once its pods are gone its log is still read through the API (from the
// log archive in S3), by its owner and no other user key. The job is held on the test's word
// (test/fixtures/recurring/held.py, served to the node from this process): its task waits in the
// executor until the test has looked at the running pods and writes its release file, where
// pi.py over 200 partitions kept both cores computing for as long as that happened to take.
// examples/pi.py itself runs on the node in spark-versions-node.test.ts, its output checked.
import { join } from 'node:path';
import t from 'tap';
import { nodeIp } from '../../testbed/real-node.js';
import { startS3Server } from '../../testbed/s3-server.js';
import {
  ANNOTATION_ADMITTED, cpuQuantity, DEFAULT_DRIVER_SERVICE, LABEL_APP, parseMemoryMib, podMemoryMib, SPARK_ROLE,
} from '../../domain/index.js';
import { APPS, chartNodeUnavailable, installChart, NS, post, send as call } from '../helpers/chart.js';
import { eventually } from '../helpers/kubernetes.js';
import { execInPod, releaseHeldTasks } from '../helpers/real-node.js';
import { servePrograms } from '../helpers/recurring-node.js';
import { SPARK_RUNTIME_IMAGE } from '../helpers/spark-node.js';
import { tempDir } from '../helpers/temp.js';

const s3Binary = process.env.SUBMISSION_SERVICE_S3_SERVER;
const skip = chartNodeUnavailable() || (s3Binary ? false : 'no S3 server (test/s3/build.sh; scripts/test.sh sets SUBMISSION_SERVICE_S3_SERVER)');

// A cold image build alone takes tens of minutes on two busy cores.
t.setTimeout(120 * 60_000);

const CREDENTIALS = 'spark-history-s3';

const terminal = (state: string | undefined) => state === 'COMPLETED' || state === 'FAILED' || state === 'KILLED' || state === 'UNKNOWN';

t.test('a PySpark job through the installed chart: executors reach the driver by DNS, the log outlives the pods', { skip }, async (t) => {
  const started = Date.now();
  const held = (await servePrograms(t))('held.py');
  // On the machine's own address, not loopback: the api pods and Spark's pods write to it.
  const s3 = await startS3Server(s3Binary!, join(tempDir(t, 'chart-spark-s3-'), 's3'), 'spark-history', nodeIp());
  t.teardown(() => s3.stop());
  await s3.store.ensureFolder('spark-events');
  const credentials = { metadata: { name: CREDENTIALS }, type: 'Opaque', stringData: { AWS_ACCESS_KEY_ID: s3.accessKey, AWS_SECRET_ACCESS_KEY: s3.secretKey } };

  // Values as a platform team writes them: this node as the one pool, history in S3. Small
  // CPU requests and one replica each: the node has two cores, and the driver and executor need them.
  const small = { requests: { cpu: '10m', memory: '128Mi' }, limits: { memory: '512Mi' } };
  const { bed, installSeconds, keys, accepted, base, agent } = await installChart(t, {
    nodePool: true,
    adminKey: false,
    values: {
      history: {
        eventLogDir: `s3a://${s3.bucket}/spark-events`, s3Endpoint: s3.endpoint, credentialsSecret: CREDENTIALS,
        server: { image: SPARK_RUNTIME_IMAGE, resources: { requests: { cpu: '10m', memory: '512Mi' }, limits: { memory: '1Gi' } } },
      },
      notebookService: { enabled: false },
      api: { replicas: 1, resources: small },
      webhook: { replicas: 1, resources: small },
    },
    // The api and the History Server read S3 with it from the start.
    prepare: async ({ core }) => { await core.createNamespacedSecret({ namespace: NS, body: credentials }); },
  });
  const { core, kc } = bed;
  // Drivers read it from the applications namespace (the chart makes that namespace).
  await core.createNamespacedSecret({ namespace: APPS, body: credentials });

  const service = await core.readNamespacedService({ name: DEFAULT_DRIVER_SERVICE, namespace: APPS });
  t.equal(service.spec?.clusterIP, 'None', 'the chart made one headless drivers\' Service in the applications namespace');

  const alice = await keys.create('user', 'chart-spark test: submits');
  const bob = await keys.create('user', 'chart-spark test: another team');
  await accepted(alice.key);

  const res = await post(agent, base, '/api/apps/', alice.key, {
    jobName: 'held', configOverrides: { type: 'Python', mainApplicationFile: held, arguments: ['1'], executor: { cores: 1, instances: 1 } },
  });
  t.equal(res.status, 201, JSON.stringify(res.json));
  const { appName, config } = res.json as { appName: string; config: { executor: { coreRequest: string; memory: string } } };
  const dnsName = `${appName}.${DEFAULT_DRIVER_SERVICE}.${APPS}.svc`;

  const driver = await eventually(() => core.readNamespacedPod({ name: appName, namespace: APPS }), (p) => Boolean(p.status?.podIP),
    { what: 'the driver pod to get its IP', timeoutMs: 300_000 });
  t.equal(driver.spec?.nodeName, bed.node.name, 'the driver runs on the real node');
  t.equal(driver.spec?.serviceAccountName, 'spark-driver', 'as the chart\'s driver service account');
  t.same([driver.spec?.hostname, driver.spec?.subdomain], [appName, DEFAULT_DRIVER_SERVICE], 'its hostname under the drivers\' Service');
  t.ok(driver.spec?.containers[0].args?.includes(`spark.driver.host=${dnsName}`), `spark.driver.host is ${dnsName}`);

  // Spark's driver creates its executors through the apiserver; the chart's webhook sizes them.
  const executor = await eventually(() => core.listNamespacedPod({ namespace: APPS, labelSelector: `${SPARK_ROLE}=executor,${LABEL_APP}=${appName}` }),
    (list) => list.items.some((p) => p.status?.phase === 'Running'), { what: 'an executor pod Running', timeoutMs: 300_000, intervalMs: 1_000 })
    .then((list) => list.items.find((p) => p.status?.phase === 'Running')!, async (error: Error) => {
      // What the driver did meanwhile: its state and the end of its log.
      const pod = await core.readNamespacedPod({ name: appName, namespace: APPS }).catch(() => undefined);
      const log = await core.readNamespacedPodLog({ name: appName, namespace: APPS, tailLines: 60 }).catch((e: Error) => `(no log: ${e.message})`);
      throw new Error(`${error.message}\ndriver: ${JSON.stringify(pod?.status?.containerStatuses?.[0]?.state)}\n${log}`);
    });
  t.same(executor.metadata?.ownerReferences?.map((o) => [o.kind, o.name]), [['Pod', appName]], 'created by Spark\'s driver (it owns the executor)');
  t.equal(executor.spec?.serviceAccountName, 'spark-driver', 'with the chart\'s driver service account');
  t.comment(`executor written by: ${(executor.metadata?.managedFields ?? []).map((f) => f.manager).join(', ')}`);
  t.ok(executor.metadata?.annotations?.[ANNOTATION_ADMITTED], 'admitted by the chart\'s webhook');
  const memory = `${podMemoryMib(parseMemoryMib(config.executor.memory), 0.4)}Mi`;
  t.same(executor.spec?.containers[0].resources, { requests: { cpu: cpuQuantity(config.executor.coreRequest), memory }, limits: { memory } }, 'sized as its config says');
  t.ok(executor.spec?.tolerations?.some((tol) => tol.key === 'submission-service/preemptible'), 'placed by the chart\'s rules: allowed onto preemptible nodes');
  const driverUrl = executor.spec?.containers[0].env?.find((e) => e.name === 'SPARK_DRIVER_URL')?.value;
  t.equal(driverUrl, `spark://CoarseGrainedScheduler@${dnsName}:7078`, 'the executor dials the driver\'s DNS name');
  // The cluster's DNS answers that name, from inside the executor, with the driver pod's IP.
  const resolved = await execInPod(kc, APPS, executor.metadata!.name!, executor.spec!.containers[0].name, ['getent', 'hosts', dnsName]).catch((error: Error) => `(${error.message})`);
  t.match(resolved, new RegExp(`^${driver.status!.podIP!.replaceAll('.', '\\.')}\\s`), `${dnsName} resolves to the driver pod's IP in the executor`);

  // Only the pod of that name may publish it: an impostor claiming the driver's hostname is refused.
  const impostor = { metadata: { name: 'impostor' }, spec: { hostname: appName, subdomain: DEFAULT_DRIVER_SERVICE, containers: [{ name: 'c', image: SPARK_RUNTIME_IMAGE }] } };
  const refused = await core.createNamespacedPod({ namespace: APPS, body: impostor }).then(() => undefined, (error: { code?: number; body?: string }) => error);
  t.equal(refused?.code, 403, 'a pod claiming another pod\'s name under the Service is refused');
  t.match(String(refused?.body), /must have its own name as its hostname/, 'by the chart\'s admission policy');
  // Looked at while it ran: its task may end, and the application with it.
  await releaseHeldTasks(kc, APPS, executor);

  const done = await eventually(async () => (await call(agent, base, 'GET', `/api/apps/${appName}`, alice.key)).json as { state?: string; stateDetail?: string },
    (app) => terminal(app.state), { what: `${appName} to end`, timeoutMs: 600_000, intervalMs: 1_000 });
  const liveLog = (await call(agent, base, 'GET', `/api/apps/${appName}/log`, alice.key)).text ?? '';
  t.equal(done.state, 'COMPLETED', done.state === 'COMPLETED' ? 'the controller ended it COMPLETED' : `${done.stateDetail ?? ''}\n${liveLog.slice(-3_000)}`);
  t.match(liveLog, /Registered executor/, 'the executor registered with the driver (it dialled the DNS name)');

  // The pods go (the log archive's finalizer holds the driver until its log is in S3).
  await core.deleteNamespacedPod({ name: appName, namespace: APPS });
  await eventually(() => core.listNamespacedPod({ namespace: APPS, labelSelector: `${LABEL_APP}=${appName}` }), (list) => list.items.length === 0,
    { what: `every pod of ${appName} to be gone`, timeoutMs: 300_000, intervalMs: 1_000 });
  const log = await call(agent, base, 'GET', `/api/apps/${appName}/log`, alice.key);
  t.equal(log.status, 200, 'the log after the pods are gone');
  t.match(log.text, /held tasks released by the test: True/, 'the driver\'s output, from the archive, through the chart\'s API');
  const other = await call(agent, base, 'GET', `/api/apps/${appName}/log`, bob.key);
  t.ok(other.status === 403 || other.status === 404, `another user key does not read it (${other.status})`);
  process.stderr.write(`chart-spark: install ${installSeconds.toFixed(1)} s, whole test ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
});
