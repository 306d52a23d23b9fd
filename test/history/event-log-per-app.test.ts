// Runs alone: real Spark drivers (FakeKubelet, a TEST DOUBLE of a kubelet, runs each as a local
// pyspark process) and the test bed's S3 server with its own IAM (versitygw 1.8).
// Object storage per application (issue 25 item 4): two applications, each driver with the key
// the controller made for it. A's key (read from A's Secret, as A's code can read its own env)
// cannot list, read or write B's event log, B's folder, the History Server's directory or the
// archived logs; A's driver writes its own event log with it; once A has ended and its log is
// collected into the history, A's key reaches nothing. On the shared key (before) every one of
// these reads and writes was allowed.
import { writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Client } from 'minio';
import t, { type Test } from 'tap';
import { buildService } from '../../cli/service.js';
import { VersityEventLogKeys } from '../../cluster/history/event-log-keys.js';
import { S3EventLogIndex } from '../../cluster/history/s3-event-log-index.js';
import { kubeClients } from '../../cluster/kubernetes/client.js';
import { KubernetesCluster } from '../../cluster/kubernetes/kubernetes-cluster.js';
import { LogArchive } from '../../cluster/kubernetes/log-archive.js';
import { eventLogSecretName } from '../../domain/index.js';
import { FakeKubelet } from '../../testbed/fake-kubelet.js';
import { startS3Server } from '../../testbed/s3-server.js';
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
const SHARED = 'spark-history-s3';

const codeOf = (work: Promise<unknown>): Promise<string> => work.then(() => 'allowed', (error: { code?: string }) => error.code ?? String(error));

/** The test bed as the chart runs it with `driverKeys: versitygw`: webhook, controller with the keys, FakeKubelet with real Spark. */
async function startPerAppBed(t: Test) {
  const dir = tempDir(t, 'subsvc-per-app-');
  const s3 = await startS3Server(s3Binary!, join(dir, 's3'), 'spark-history', '127.0.0.1', { users: true });
  t.teardown(() => s3.stop());
  const eventLogDir = `s3a://${s3.bucket}/spark-events`;
  const s3Rules = { endpoint: s3.endpoint, pathStyleAccess: true, credentialsSecret: SHARED, incomingDir: `s3a://${s3.bucket}/spark-incoming` };
  const bed = await startKubeBed(t, { rules: { eventLog: { dir: eventLogDir, s3: s3Rules }, archiveLogs: true } });
  const { namespace, clients } = bed;
  // The shared key drivers got before: still there, no driver may be given it.
  await clients.core.createNamespacedSecret({
    namespace, body: { metadata: { name: SHARED }, type: 'Opaque', stringData: { AWS_ACCESS_KEY_ID: s3.accessKey, AWS_SECRET_ACCESS_KEY: s3.secretKey } },
  });
  await bed.api.close();
  await s3.store.ensureFolder('spark-events');
  const archive = new LogArchive(s3.store, 'spark-logs');
  const keys = new VersityEventLogKeys({ adminEndpoint: s3.endpoint, accessKey: s3.accessKey, secretKey: s3.secretKey, store: s3.store });
  const cluster = new KubernetesCluster({
    clients: kubeClients(bed.testbed.kubeconfig), namespace, logArchive: archive,
    eventLogAccess: { keys, store: s3.store, incomingPrefix: 'spark-incoming', eventLogPrefix: 'spark-events' },
  });
  await cluster.start();
  const api = await buildService({ cluster, auth: { enabled: false, store: { verify: () => undefined, lookup: () => undefined } as never }, sessionSecret: randomBytes(32) });
  const url = await api.listen({ port: 0, host: '127.0.0.1' });
  t.teardown(async () => { await api.close(); await cluster.close(); });
  const kubelet = new FakeKubelet({ clients, namespace, dataDir: join(dir, 'kubelet'), ...spark!, cores: 1, classPath });
  await kubelet.start();
  t.teardown(() => kubelet.stop());
  const index = new S3EventLogIndex(s3.store, 'spark-events');
  const collected = (appName: string) => until(async () => { await index.refresh(); return index.lookup(appName)?.completed === true; },
    { timeoutMs: 120_000, intervalMs: 500, what: `${appName}'s event log in the history` });

  const read = (appName: string) => http(url, 'GET', `/api/apps/${appName}`).then((r) => r.json as { state: string });
  const submit = async (jobName: string, file: string, args: string[]) => {
    const res = await http(url, 'POST', '/api/apps/', { jobName, configOverrides: { type: 'Python', mainApplicationFile: `local://${file}`, arguments: args, executor: { cores: 1, instances: 1 } } });
    if (res.status !== 201) throw new Error(`submission answered ${res.status}: ${res.text}`);
    return res.json.appName as string;
  };
  return { dir, s3, namespace, clients, keys, index, collected, read, submit };
}

t.test("a driver's key reaches its own event log only, and nothing once its run is collected", { skip, timeout: 900_000 }, async (t) => {
  const { dir, s3, namespace, clients, keys, index, collected, read, submit } = await startPerAppBed(t);
  const release = join(dir, 'release-a');
  const a = await submit('waits', join(repoRoot, 'test', 'fixtures', 'history', 'waits.py'), [release]);
  const b = await submit('pi', join(repoRoot, 'examples', 'pi.py'), ['2']);

  const driver = await eventually(() => clients.core.readNamespacedPod({ name: a, namespace }), () => true, { what: "A's driver pod" });
  const env = driver.spec!.containers[0]!.env ?? [];
  t.same(env.filter((e) => e.name.startsWith('AWS_')).map((e) => e.valueFrom?.secretKeyRef?.name), [eventLogSecretName(a), eventLogSecretName(a)],
    "A's driver gets A's own Secret, not the shared one");
  // The key A's code holds: the Secret its driver's env names (before: the shared one).
  const named = env.find((e) => e.name === 'AWS_ACCESS_KEY_ID')!.valueFrom!.secretKeyRef!.name!;
  const secret = await eventually(() => clients.core.readNamespacedSecret({ name: named, namespace }), () => true, { what: "A's Secret" });
  t.equal(secret.metadata?.ownerReferences?.[0]?.name, a, 'the Secret is owned by its Application (it goes with it)');
  const key = (name: string) => Buffer.from(secret.data![name]!, 'base64').toString('utf8');
  const endpoint = new URL(s3.endpoint);
  const asA = new Client({ endPoint: endpoint.hostname, port: Number(endpoint.port), useSSL: false, accessKey: key('AWS_ACCESS_KEY_ID'), secretKey: key('AWS_SECRET_ACCESS_KEY'), pathStyle: true, region: 'us-east-1' });
  t.not(key('AWS_ACCESS_KEY_ID'), s3.accessKey, 'not the shared key');

  await waitForState(() => read(b), 'COMPLETED', { timeoutMs: 400_000, intervalMs: 250 });
  await collected(b);
  const bLog = `spark-events/${index.lookup(b)!.entry}/${index.lookup(b)!.entry.replace('eventlog_v2_', 'events_1_')}`;
  await until(async () => (await s3.store.size(`spark-logs/${b}/driver.log`)) !== undefined, { timeoutMs: 120_000, intervalMs: 500, what: "B's archived driver log" });
  const list = async (prefix: string) => { for await (const _ of asA.listObjectsV2(s3.bucket, prefix, true)); };
  for (const prefix of ['spark-events/', 'spark-incoming/', `spark-incoming/${b}/`, 'spark-logs/', `spark-logs/${b}/`, '']) {
    t.equal(await codeOf(list(prefix)), 'AccessDenied', `A's key cannot list "${prefix}"`);
  }
  for (const object of [bLog, `spark-logs/${b}/driver.log`, `spark-logs/${a}/driver.log`]) {
    t.equal(await codeOf(asA.getObject(s3.bucket, object)), 'AccessDenied', `A's key cannot read ${object}`);
    t.equal(await codeOf(asA.putObject(s3.bucket, object, Buffer.from('forged'))), 'AccessDenied', `A's key cannot write ${object}`);
  }
  t.equal(await codeOf(asA.putObject(s3.bucket, `spark-incoming/${b}/eventlog_v2_x/events_1_x`, Buffer.from('forged'))), 'AccessDenied', "A's key cannot write into B's folder");
  t.equal(await codeOf(asA.putObject(s3.bucket, `spark-incoming/${a}/probe`, Buffer.from('mine'))), 'allowed', "A's key writes in A's own folder");
  await asA.removeObject(s3.bucket, `spark-incoming/${a}/probe`);

  // A's driver wrote into its own folder with its key (S3A shows a file once it is closed: the status file, the folder's marker).
  const own: string[] = [];
  await until(async () => {
    own.length = 0;
    for await (const item of s3.store.list(`spark-incoming/${a}/`)) if ('key' in item) own.push(item.key);
    return own.some((k) => /\/appstatus_.*\.inprogress$/.test(k));
  }, { timeoutMs: 240_000, intervalMs: 500, what: "A's event log in its folder" });
  t.pass(`A's driver writes its own event log with its key (${own.join(', ')})`);

  writeFileSync(release, '');
  await waitForState(() => read(a), 'COMPLETED', { timeoutMs: 400_000, intervalMs: 250 });
  await collected(a);
  t.match(index.lookup(a), { completed: true }, "A's log is in the history, moved by the controller");
  await until(async () => !(await keys.granted()).includes(a), { timeoutMs: 60_000, intervalMs: 250, what: "A's rights to go" });
  t.match(await codeOf(asA.putObject(s3.bucket, `spark-incoming/${a}/late`, Buffer.from('late'))), /InvalidAccessKeyId|AccessDenied/, "collected: A's key writes nothing");
  t.match(await codeOf(list(`spark-incoming/${a}/`)), /InvalidAccessKeyId|AccessDenied/, "collected: A's key lists nothing");
  t.same(await keys.granted(), [], 'no application has rights in the store any more');
  let left = 0;
  for await (const _ of s3.store.list('spark-incoming/')) left++;
  t.equal(left, 0, 'the drivers\' folders are gone');
});
