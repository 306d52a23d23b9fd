// Runs alone (scripts/test.sh): a real node is one per machine, and Spark's JVMs run in its
// containers (a driver and executors at once load both cores).
//
// Spark's real cluster mode, end to end, on the test bed's real node (testbed/real-node.ts)
// with the Spark runtime image this repository builds (images/build.sh): `POST /api/apps/`
// writes the bare driver pod; our webhook renders it (image, Spark properties, service
// account); the kubelet runs it in a container, where our entrypoint starts Spark's driver;
// the driver reaches the apiserver through the "kubernetes" Service with its service account
// and creates executor pods, which our webhook sizes; the executors connect back to the driver
// over the pod network; the controller ends the application COMPLETED, and its log comes back
// through the API. Then, on the same node: a CloudServiceAccount key in driver and executors,
// dynamic allocation growing to two executors, the Spark UI through the dashboard,
// `kubectl delete application`, a driver killed
// mid-run, and a team's own pod sized by admission. The drivers run under the chart's drivers'
// admission policy, which the test bed installs: the driver's own token makes no pod or
// ConfigMap its pod does not own, while Spark's creates and its cleanup at the end pass.
// The applications are a real PySpark job held on the test's word (test/fixtures/recurring/held.py,
// served to the node from this process): its tasks wait in their executors until the test writes
// their release file, so each stays up while the test looks at it and no longer, where pi.py over
// 150 and 3000 partitions kept both cores computing for as long as that happened to take.
// examples/pi.py itself runs on the node in spark-versions-node.test.ts, its output checked.
import { execFile } from 'node:child_process';
import t from 'tap';
import type { V1Pod } from '@kubernetes/client-node';
import { eventually } from '../helpers/kubernetes.js';
import { execInPod, releaseHeldTasks } from '../helpers/real-node.js';
import { servePrograms } from '../helpers/recurring-node.js';
import { driverTokenOwnsOnly, sparkCleanupAllowed } from '../helpers/driver-token.js';
import { PI_PY, SPARK_RUNTIME_IMAGE, type SparkNodeBed, sparkNodeUnavailable, startSparkNodeBed } from '../helpers/spark-node.js';
import {
  ANNOTATION_ADMITTED, ANNOTATION_OVERRIDES, cpuQuantity, DRIVER_CONTAINER, LABEL_APP, LABEL_JOB, parseMemoryMib, podMemoryMib, readConfig, SPARK_ROLE,
} from '../../domain/index.js';

const unavailable = sparkNodeUnavailable();
// A cold image build takes tens of minutes; a warm run a few minutes.
t.setTimeout(90 * 60_000);

/** A Secret the rules let submissions mount (helpers/spark-node.ts). */
const CLOUD_SECRET = 'gcp-key';

const terminal = (state: string | undefined) => state === 'COMPLETED' || state === 'FAILED' || state === 'KILLED' || state === 'UNKNOWN';
const running = (list: V1Pod[]) => list.filter((p) => p.status?.phase === 'Running');

/**
 * An application that runs until the test ends it (deleted, or its driver killed): two held tasks,
 * so dynamic allocation asks for a second executor (2 at most, each given back after 5 s idle).
 */
async function submitHeld(bed: SparkNodeBed, program: string, jobName: string): Promise<string> {
  const res = await bed.call('POST', '/api/apps/', {
    jobName,
    configOverrides: {
      type: 'Python', mainApplicationFile: program, arguments: ['2'], executor: { cores: 1, instances: 1 },
      engineConf: { 'spark.dynamicAllocation.maxExecutors': '2', 'spark.dynamicAllocation.executorIdleTimeout': '5s' },
    },
  });
  if (res.status !== 201) throw new Error(`POST /api/apps/: ${res.status} ${res.body}`);
  return (res.json as { appName: string }).appName;
}

t.test('Spark cluster mode on a real node', { skip: unavailable }, async (t) => {
  const bed = await startSparkNodeBed(t);
  const { core, namespace } = bed;
  const held = (await servePrograms(t))('held.py');
  // Not execFileSync: the webhook answers from this process, so its event loop must keep running.
  const kubectl = (args: string[], input?: string) => new Promise<string>((ok, fail) => {
    const child = execFile('kubectl', ['--kubeconfig', bed.testbed.kubeconfig, ...args], { encoding: 'utf8', maxBuffer: 1 << 22 },
      (error, stdout, stderr) => (error ? fail(new Error(`kubectl ${args.join(' ')}: ${stderr || error.message}`)) : ok(stdout)));
    child.stdin?.end(input ?? '');
  });
  const pods = async (selector: string) => (await core.listNamespacedPod({ namespace, labelSelector: selector })).items;

  // A Google service-account key, as a team would store it; mounted into driver and executors.
  const cloudKey = { name: CLOUD_SECRET, path: '/mnt/secrets/gcp', secretType: 'CloudServiceAccount' as const };
  const keyJson = JSON.stringify({ type: 'service_account', project_id: 'testbed', client_email: 'spark@testbed.example' });
  await core.createNamespacedSecret({ namespace, body: { metadata: { name: CLOUD_SECRET }, stringData: { 'key.json': keyJson } } });
  /** The key file a container's GOOGLE_APPLICATION_CREDENTIALS names, read inside it. */
  const credentials = (pod: string, container: string) => execInPod(bed.kc, namespace, pod, container, ['sh', '-c', 'cat "$GOOGLE_APPLICATION_CREDENTIALS"']);

  t.test('a PySpark job runs in a driver container with executor pods Spark created, ends COMPLETED, its log readable', async (t) => {
    const res = await bed.call('POST', '/api/apps/', {
      jobName: 'held',
      configOverrides: {
        type: 'Python', mainApplicationFile: held, arguments: ['1'],
        driver: { secrets: [cloudKey] }, executor: { cores: 1, instances: 1, secrets: [cloudKey] },
      },
    });
    t.equal(res.status, 201, res.body);
    const { appName, config } = res.json as { appName: string; config: { image: string; driver: { serviceAccount: string }; executor: { coreRequest: string; memory: string } } };
    t.equal(config.image, SPARK_RUNTIME_IMAGE, 'the image from the rules');

    // The driver runs in a container on the node, as the drivers' service account.
    const driver = await eventually(() => core.readNamespacedPod({ name: appName, namespace }),
      (p) => p.status?.phase !== 'Pending', { what: 'the driver pod to start', timeoutMs: 300_000 });
    t.equal(driver.spec?.nodeName, bed.node.name, 'on the real node');
    t.equal(driver.spec?.serviceAccountName, config.driver.serviceAccount, 'as the drivers\' service account');
    t.equal(driver.spec?.containers[0].image, SPARK_RUNTIME_IMAGE);
    t.match(driver.status?.containerStatuses?.[0].containerID, /^containerd:\/\//, 'in a container');

    // Spark's driver created its executors through the apiserver; the webhook sized them.
    const executor = await eventually(() => pods(`${SPARK_ROLE}=executor,${LABEL_APP}=${appName}`),
      (list) => list.some((p) => p.status?.phase === 'Running'), { what: 'an executor pod Running', timeoutMs: 300_000 })
      .then((list) => list.find((p) => p.status?.phase === 'Running')!);
    t.equal(executor.metadata?.annotations?.[ANNOTATION_ADMITTED] !== undefined, true, 'admitted by our webhook');
    t.same(executor.metadata?.ownerReferences?.map((o) => [o.kind, o.name]), [['Pod', appName]], 'owned by the driver pod (Spark sets it)');
    const memory = `${podMemoryMib(parseMemoryMib(config.executor.memory), bed.rules.sizing.memoryOverheadFactor)}Mi`;
    t.same(executor.spec?.containers[0].resources, {
      requests: { cpu: cpuQuantity(config.executor.coreRequest), memory }, limits: { memory },
    }, 'sized as the application\'s executor config says');
    t.ok(executor.spec?.tolerations?.some((tol) => tol.key === bed.rules.placement.preemptibleTaints[0].key), 'allowed onto preemptible nodes');
    t.equal(executor.spec?.nodeName, bed.node.name);
    t.equal(executor.spec?.containers[0].image, SPARK_RUNTIME_IMAGE, 'spark.kubernetes.container.image');
    // The CloudServiceAccount key reaches both, where GOOGLE_APPLICATION_CREDENTIALS says.
    t.equal(await credentials(appName, DRIVER_CONTAINER), keyJson, 'the driver reads key.json at $GOOGLE_APPLICATION_CREDENTIALS');
    t.equal(await credentials(executor.metadata!.name!, executor.spec!.containers[0].name), keyJson, 'so does the executor');
    await driverTokenOwnsOnly(t, bed.clients, driver, `submission-service-driver-pods-${namespace}`, SPARK_RUNTIME_IMAGE);
    await releaseHeldTasks(bed.kc, namespace, executor); // looked at while it ran: its task may end, and the application with it

    const done = await eventually(async () => (await bed.call('GET', `/api/apps/${appName}`)).json as { state?: string; stateDetail?: string },
      (app) => terminal(app.state), { what: `${appName} to end`, timeoutMs: 600_000, intervalMs: 1_000 });
    const log = (await bed.call('GET', `/api/apps/${appName}/log`)).body;
    t.equal(done.state, 'COMPLETED', done.state === 'COMPLETED' ? 'the controller ended it COMPLETED' : `${done.stateDetail ?? ''}\n${log.slice(-3_000)}`);
    t.match(log, /held tasks released by the test: True/, 'the driver\'s output, through the API');
    t.match(log, /Registered executor NettyRpcEndpointRef|Executor added|Registered executor/, 'an executor connected to the driver');
    t.equal((await sparkCleanupAllowed(t, core, driver, log)).status?.phase, 'Succeeded', 'the driver container exited 0');
  });

  const heldJob = (jobName: string) => submitHeld(bed, held, jobName);

  t.test('dynamic allocation grows to two executors; the dashboard opens the Spark UI; `kubectl delete application` removes driver and executors', async (t) => {
    const appName = await heldJob('grow');
    const executors = await eventually(() => pods(`${SPARK_ROLE}=executor,${LABEL_APP}=${appName}`),
      (list) => running(list).length >= 2, { what: 'two executor pods Running', timeoutMs: 400_000, intervalMs: 1_000 });
    t.equal(running(executors).length, 2, 'two executors (spark.dynamicAllocation.maxExecutors), from one at the start');
    const app = await eventually(async () => (await bed.call('GET', `/api/apps/${appName}`)).json as { runningExecutors?: number; state?: string },
      (a) => (a.runningExecutors ?? 0) >= 2, { what: 'the application to count two running executors', timeoutMs: 60_000 });
    t.equal(app.state, 'RUNNING');

    // The dashboard's Spark UI link opens the running driver's UI, served from its pod.
    const ui = await bed.call('GET', `/dashboard/apps/${appName}/spark-ui/jobs/`);
    t.equal(ui.status, 200, 'the Spark UI through the dashboard');
    t.match(ui.body, /Spark Jobs/, 'the driver\'s jobs page');
    t.match(ui.body, new RegExp(`/dashboard/apps/${appName}/spark-ui/`), 'its links stay under the dashboard\'s path (spark.ui.proxyBase)');

    await kubectl(['-n', namespace, 'delete', 'application', appName, '--wait=false']);
    const left = await eventually(() => pods(`${LABEL_APP}=${appName}`), (list) => list.length === 0,
      { what: `every pod of ${appName} to go`, timeoutMs: 300_000, intervalMs: 1_000 });
    t.same(left, [], 'driver and executors are gone (garbage collection: Application -> driver pod -> executor pods)');
  });

  t.test('a driver killed mid-run ends FAILED with the reason in stateDetail', async (t) => {
    const appName = await heldJob('killed');
    await eventually(() => pods(`${SPARK_ROLE}=executor,${LABEL_APP}=${appName}`), (list) => running(list).length >= 1,
      { what: 'an executor Running (the job runs)', timeoutMs: 400_000, intervalMs: 1_000 });
    // The driver's JVM killed inside its container, as the kernel's OOM killer would.
    await execInPod(bed.kc, namespace, appName, DRIVER_CONTAINER, ['sh', '-c', 'pkill -KILL -f "org[.]apache[.]spark[.]deploy[.]SparkSubmit"']);
    const app = await eventually(async () => (await bed.call('GET', `/api/apps/${appName}`)).json as { state?: string; stateDetail?: string },
      (a) => terminal(a.state), { what: `${appName} to end`, timeoutMs: 120_000, intervalMs: 1_000 });
    t.equal(app.state, 'FAILED');
    t.match(app.stateDetail, /exit code 137/, 'stateDetail says how the driver ended (SIGKILL)');
    await core.deleteNamespacedPod({ name: appName, namespace, gracePeriodSeconds: 0 });
  });

  t.test('a team\'s own pod labelled for admission, created with kubectl, is sized', async (t) => {
    const team = {
      apiVersion: 'v1', kind: 'Pod',
      metadata: {
        generateName: 'nightly-report-', labels: { [LABEL_JOB]: 'nightly-report', team: 'analytics' },
        annotations: { [ANNOTATION_OVERRIDES]: JSON.stringify({ type: 'Python', mainApplicationFile: PI_PY, arguments: ['2'], executor: { cores: 1 } }) },
      },
      spec: { containers: [{ name: DRIVER_CONTAINER }] },
    };
    const created = await kubectl(['-n', namespace, 'create', '-o', 'json', '-f', '-'], JSON.stringify(team));
    const pod = JSON.parse(created) as V1Pod;
    const config = readConfig(pod);
    t.ok(config, 'admitted: the pod carries its effective config');
    t.equal(pod.spec?.containers[0].image, SPARK_RUNTIME_IMAGE, 'the image filled in');
    const memory = `${podMemoryMib(parseMemoryMib(config!.driver!.memory!), bed.rules.sizing.memoryOverheadFactor)}Mi`;
    t.same(pod.spec?.containers[0].resources, {
      requests: { cpu: cpuQuantity(config!.driver!.coreRequest!), memory }, limits: { memory },
    }, 'sized by the rules');
    t.equal(pod.spec?.serviceAccountName, bed.rules.serviceAccount);
    await core.deleteNamespacedPod({ name: pod.metadata!.name!, namespace, gracePeriodSeconds: 0 });
  });
});
