// Runs alone: real Spark drivers (FakeKubelet, a TEST DOUBLE of a kubelet, runs each as a local
// pyspark process), a real S3 server, Spark's History Server.
// One link for an application's whole life in Kubernetes mode, on the test bed: drivers write
// their event logs to the S3 server through S3A (credentials from a Secret), the controller
// archives the driver log before the pod may go, and after the pod is deleted the API reads the
// log from the archive and the dashboard's link opens the run from the History Server reading
// s3a://. A failed run's history shows its failed stage. Retention removes it all.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Client } from 'minio';
import t from 'tap';
import { RetentionSweeper } from '../../cluster/history/retention.js';
import { KubernetesCluster } from '../../cluster/kubernetes/kubernetes-cluster.js';
import { KubernetesSparkHistory } from '../../cluster/kubernetes/kubernetes-history.js';
import { LogArchive } from '../../cluster/kubernetes/log-archive.js';
import { kubeClients } from '../../cluster/kubernetes/client.js';
import { buildService } from '../../cli/service.js';
import { FakeKubelet } from '../../testbed/fake-kubelet.js';
import { s3HistoryServer, startS3Server } from '../../testbed/s3-server.js';
import { LOG_ARCHIVE_FINALIZER } from '../../domain/index.js';
import { repoRoot } from '../helpers/api.js';
import { eventually, startKubeBed } from '../helpers/kubernetes.js';
import { until, waitForState } from '../helpers/poll.js';
import { http, realSpark } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';

const spark = realSpark();
const s3Binary = process.env.SUBMISSION_SERVICE_S3_SERVER;
const classPath = process.env.SUBMISSION_SERVICE_S3A_JARS;
const skip = !spark ? 'no Spark virtualenv (scripts/setup.sh makes one)'
  : !s3Binary ? 'no S3 server (test/s3/build.sh; scripts/test.sh sets SUBMISSION_SERVICE_S3_SERVER)'
    : !classPath ? 'no S3A jars (scripts/setup.sh with SETUP_TEST_TOOLS=1)' : false;
const pi = `local://${join(repoRoot, 'examples', 'pi.py')}`;
const CREDENTIALS = 'spark-history-s3';

t.test('Kubernetes mode: event log and driver log in S3, read after the pod is gone; the history UI; retention', { skip, timeout: 900_000 }, async (t) => {
  const dir = tempDir(t, 'subsvc-k8s-history-');
  const s3 = await startS3Server(s3Binary!, join(dir, 's3'));
  t.teardown(() => s3.stop());
  const eventLogDir = `s3a://${s3.bucket}/spark-events`;
  const endpoint = { endpoint: s3.endpoint, pathStyleAccess: true, credentialsSecret: CREDENTIALS };
  const bed = await startKubeBed(t, { rules: { eventLog: { dir: eventLogDir, s3: endpoint }, archiveLogs: true } });
  const { namespace, clients } = bed;
  await clients.core.createNamespacedSecret({
    namespace, body: { metadata: { name: CREDENTIALS }, type: 'Opaque', stringData: { AWS_ACCESS_KEY_ID: s3.accessKey, AWS_SECRET_ACCESS_KEY: s3.secretKey } },
  });
  // The API as the chart runs it: controller, log archive and history; the bed's own steps aside.
  await bed.api.close();
  const archive = new LogArchive(s3.store, 'spark-logs');
  const cluster = new KubernetesCluster({ clients: kubeClients(bed.testbed.kubeconfig), namespace, logArchive: archive });
  await cluster.start();
  const historyServer = s3HistoryServer(s3, { ...spark!, classPath: classPath!, eventLogDir, dir: join(dir, 'history-server') });
  const history = new KubernetesSparkHistory({
    store: s3.store, eventLogPrefix: 'spark-events', server: await (async () => { await s3.store.ensureFolder('spark-events'); return historyServer.url(); })(),
    logArchive: archive, events: cluster.events, log: (m) => t.comment(m), retentionMs: 3_600_000,
  });
  await history.ready;
  const api = await buildService({ cluster, history, auth: { enabled: false, store: { verify: () => undefined, lookup: () => undefined } as never }, sessionSecret: randomBytes(32) });
  const url = await api.listen({ port: 0, host: '127.0.0.1' });
  t.teardown(async () => { await api.close(); await history.close(); await cluster.close(); await historyServer.close(); });
  const kubelet = new FakeKubelet({ clients, namespace, dataDir: join(dir, 'kubelet'), ...spark!, cores: 2, classPath });
  await kubelet.start();
  t.teardown(() => kubelet.stop());

  const read = (appName: string) => http(url, 'GET', `/api/apps/${appName}`).then((r) => r.json as { state: string; config: { engineConf: Record<string, string> }; sparkUi: { state: string; url: string | null } });
  const submit = async (jobName: string, mainApplicationFile: string, args: string[] = []) => {
    const res = await http(url, 'POST', '/api/apps/', { jobName, configOverrides: { type: 'Python', mainApplicationFile, arguments: args, executor: { cores: 1, instances: 1 } } });
    if (res.status !== 201) throw new Error(`submission answered ${res.status}: ${res.text}`);
    return res.json.appName as string;
  };
  const good = await submit('pi', pi, ['4']);
  const bad = await submit('fails', `local://${join(repoRoot, 'test', 'fixtures', 'history', 'fails.py')}`);

  const driver = await eventually(() => clients.core.readNamespacedPod({ name: good, namespace }), () => true, { what: 'the driver pod' });
  t.ok(driver.metadata?.finalizers?.includes(LOG_ARCHIVE_FINALIZER), 'admission holds the driver pod for the log archive');
  const env = driver.spec!.containers[0]!.env ?? [];
  t.same(env.filter((e) => e.name.startsWith('AWS_')).map((e) => [e.name, e.value, e.valueFrom?.secretKeyRef?.name]),
    [['AWS_ACCESS_KEY_ID', undefined, CREDENTIALS], ['AWS_SECRET_ACCESS_KEY', undefined, CREDENTIALS]], 'the credentials come from the Secret, not from the config');
  const config = (await read(good)).config;
  t.equal(config.engineConf['spark.eventLog.dir'], eventLogDir, 'admission set the event log directory');
  t.notOk(JSON.stringify(config).includes(s3.secretKey), 'the secret is nowhere in the effective config');

  await waitForState(() => read(good), 'COMPLETED', { timeoutMs: 400_000, intervalMs: 250 });
  // Deleted right after the end, before anyone read the log: the finalizer keeps the pod until it is archived.
  await clients.core.deleteNamespacedPod({ name: good, namespace });
  await waitForState(() => read(bad), 'FAILED', { timeoutMs: 400_000, intervalMs: 250 });
  await clients.core.deleteNamespacedPod({ name: bad, namespace });
  await eventually(() => bed.pods(), (pods) => pods.length === 0, { timeoutMs: 120_000, what: 'the driver pods to go' });

  // The objects, as any S3 client sees them.
  const client = new Client({ endPoint: '127.0.0.1', port: Number(new URL(s3.endpoint).port), useSSL: false, accessKey: s3.accessKey, secretKey: s3.secretKey, pathStyle: true });
  const keys: string[] = [];
  for await (const item of client.listObjectsV2(s3.bucket, '', true)) if (item.name) keys.push(item.name);
  t.equal(keys.filter((k) => /^spark-events\/eventlog_v2_[^/]+\/events_1_/.test(k)).length, 2, `an event log per run in the bucket (${keys.join(', ')})`);
  t.ok(keys.includes(`spark-logs/${good}/driver.log`) && keys.includes(`spark-logs/${bad}/driver.log`), 'each driver log is archived');

  const log = await http(url, 'GET', `/api/apps/${good}/log`);
  t.equal(log.status, 200);
  t.match(log.text, /Pi is roughly/, 'the log is read from the archive once the pod is gone');
  const at = log.text.indexOf('Pi is roughly');
  const tail = await http(url, 'GET', `/api/apps/${good}/log?offset=${Buffer.byteLength(log.text.slice(0, at))}`);
  t.equal(tail.text, log.text.slice(at), 'offset reads from that byte of the archive');
  const executor = await http(url, 'GET', `/api/apps/${good}/log?container=executor-1`);
  t.equal(executor.status, 404, 'no executor pod ran (local[N] in the driver), none was archived');
  t.match(executor.json.message, /executor-1/);
  t.equal((await http(url, 'GET', `/api/apps/${good}/log?container=../${bad}/driver`)).status, 400, 'a container is driver or executor-N, never a path');

  await until(async () => (await read(good)).sparkUi.state === 'history', { timeoutMs: 120_000, intervalMs: 500, what: 'the history state' });
  t.equal((await read(good)).sparkUi.url, `/dashboard/apps/${good}/spark-ui/`, 'the one link');
  const jobs = await http(url, 'GET', `/dashboard/apps/${good}/spark-ui/jobs/`);
  t.equal(jobs.status, 200, 'the history UI answers its jobs page');
  t.match(jobs.text, /Completed Jobs/);
  const stages = await http(url, 'GET', `/dashboard/apps/${bad}/spark-ui/stages/`);
  t.equal(stages.status, 200);
  t.match(stages.text, /Failed Stages/, "a failed run's history shows its failed stage");

  // Retention: with a one-minute setting, a sweep two minutes later removes it all.
  const shortHistory = new KubernetesSparkHistory({ store: s3.store, eventLogPrefix: 'spark-events', server: new URL('http://127.0.0.1:9'), logArchive: archive, events: cluster.events, log: (m) => t.comment(m), retentionMs: 60_000 });
  t.teardown(() => shortHistory.close());
  const sweeper = new RetentionSweeper({ cluster, history: shortHistory, retentionMs: 60_000, onError: (error) => t.fail(String(error)) });
  t.teardown(() => sweeper.close());
  t.equal(await sweeper.sweep(Date.now() + 120_000), 2, 'both expired applications are removed');
  const left: string[] = [];
  for await (const item of client.listObjectsV2(s3.bucket, '', true)) if (item.name && item.name !== 'spark-events/') left.push(item.name);
  t.same(left, [], 'their event logs and archived logs are gone from the bucket');
  t.equal((await http(url, 'GET', `/api/apps/${good}`)).status, 404, 'the record is gone');
  t.equal((await http(url, 'GET', `/dashboard/apps/${good}/spark-ui/`)).status, 404, 'the link answers 404');
});
