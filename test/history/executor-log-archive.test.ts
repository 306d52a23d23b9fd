// Executor pods and the log archive, on the test bed (real apiserver, our webhook, the
// controller with its log archive on the test bed's S3 server): admission puts the archive's
// finalizer on a Spark executor pod as on the driver, so an executor that Spark deletes as it
// ends stays until the controller has tried to keep its log; and a pod whose log cannot be
// read (here: no kubelet serves it) is let go after the bounded wait, never pinned.
import { join } from 'node:path';
import t from 'tap';
import { kubeClients } from '../../cluster/kubernetes/client.js';
import { KubernetesCluster } from '../../cluster/kubernetes/kubernetes-cluster.js';
import { LogArchive } from '../../cluster/kubernetes/log-archive.js';
import { buildApi } from '../../submit-api/app.js';
import { startS3Server } from '../../testbed/s3-server.js';
import { LOG_ARCHIVE_FINALIZER } from '../../domain/index.js';
import { eventually, fakeKubelet, httpCall, sparkExecutorPod, startKubeBed } from '../helpers/kubernetes.js';
import { tempDir } from '../helpers/temp.js';

const s3Binary = process.env.SUBMISSION_SERVICE_S3_SERVER;
const skip = s3Binary ? false : 'no S3 server (test/s3/build.sh; scripts/test.sh sets SUBMISSION_SERVICE_S3_SERVER)';

t.test('executor pods are held for the log archive, and let go after the bounded wait when their log cannot be read', { skip, timeout: 300_000 }, async (t) => {
  const dir = tempDir(t, 'subsvc-executor-archive-');
  const s3 = await startS3Server(s3Binary!, join(dir, 's3'));
  t.teardown(() => s3.stop());
  const bed = await startKubeBed(t, { rules: { archiveLogs: true } });
  const { namespace, clients } = bed;
  await bed.api.close(); // the controller below, with the log archive, takes its place
  const messages: string[] = [];
  // Long enough that the pod is surely still held when read right after its deletion.
  const giveUpMs = 20_000;
  const cluster = new KubernetesCluster({
    clients: kubeClients(bed.testbed.kubeconfig), namespace, logArchive: new LogArchive(s3.store, 'spark-logs'),
    logArchiveGiveUpMs: giveUpMs, log: (message) => { messages.push(message); t.comment(message); },
  });
  await cluster.start();
  t.teardown(() => cluster.close());
  const api = await buildApi({ cluster, auth: { enabled: false, store: { verify: () => undefined } } });
  const url = await api.listen({ port: 0, host: '127.0.0.1' });
  t.teardown(() => api.close());

  const submitted = await httpCall(url, 'POST', '/api/apps/', { jobName: 'wide', configOverrides: { type: 'Python', mainApplicationFile: 'local:///opt/spark/examples/src/main/python/pi.py', executor: { cores: 1, instances: 2 } } });
  if (submitted.status !== 201) throw new Error(`submission answered ${submitted.status}: ${submitted.body}`);
  const appName = (submitted.json as { appName: string }).appName;
  const driver = await fakeKubelet(clients, namespace, appName, 'Running');
  t.ok(driver.metadata?.finalizers?.includes(LOG_ARCHIVE_FINALIZER), 'the driver is held for the archive');

  const executor = await clients.core.createNamespacedPod({ namespace, body: sparkExecutorPod(driver, 1, namespace) });
  const name = executor.metadata!.name!;
  t.same(executor.metadata?.finalizers, [LOG_ARCHIVE_FINALIZER], 'admission holds the executor pod for the archive too');
  await fakeKubelet(clients, namespace, name, 'Running');
  await fakeKubelet(clients, namespace, name, 'Failed', 143);

  // Spark deletes its executors as it ends: the pod stays while its log is being kept.
  await clients.core.deleteNamespacedPod({ name, namespace });
  const held = await clients.core.readNamespacedPod({ name, namespace });
  t.ok(held.metadata?.deletionTimestamp, 'being deleted');
  t.same(held.metadata?.finalizers, [LOG_ARCHIVE_FINALIZER], 'held by the archive\'s finalizer');

  // Its log cannot be read (no kubelet serves it): after the bounded wait it goes anyway, and says so.
  await eventually(() => bed.pods(`spark-role=executor`), (pods) => pods.length === 0, { timeoutMs: giveUpMs + 90_000, intervalMs: 500, what: 'the executor pod to go' });
  t.ok(messages.some((m) => m.includes(name) && /giving up/.test(m)), 'the controller says the pod went without its log');
  t.equal(await s3.store.size(`spark-logs/${appName}/executor-1.log`), undefined, 'nothing half-written was left in the store');
});
