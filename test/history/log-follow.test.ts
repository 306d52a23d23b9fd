// The log archive follows a running driver's log (Kubernetes mode, on the test bed: real
// apiserver, our webhook, the controller with its log archive, the test bed's S3 server, and
// FakeKubelet — a TEST DOUBLE of a kubelet running the driver as a local process and serving its
// log through the apiserver). The driver writes its log in steps and waits between them for the
// test, so the test sees full parts in the store while the pod still runs; the follow stream is
// cut by the kubelet, then the controller is replaced by another (the Lease moves), which goes on
// with the upload the first one left (its state beside the archive; lines found again by their
// times, which FakeKubelet serves as a kubelet does) instead of reading the log again from its
// start; the archive must still be the log byte for byte, and the follow (not a whole read at the
// end) wrote it.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'minio';
import t from 'tap';
import { kubeClients } from '../../cluster/kubernetes/client.js';
import { KubernetesCluster } from '../../cluster/kubernetes/kubernetes-cluster.js';
import { LogArchive } from '../../cluster/kubernetes/log-archive.js';
import { capMarker } from '../../cluster/kubernetes/log-size-cap.js';
import { FOLLOW_PART_BYTES } from '../../cluster/kubernetes/part-buffers.js';
import { buildApi } from '../../submit-api/app.js';
import { FakeKubelet } from '../../testbed/fake-kubelet.js';
import { startS3Server } from '../../testbed/s3-server.js';
import { LOG_ARCHIVE_FINALIZER } from '../../domain/index.js';
import { eventually, httpCall, startKubeBed } from '../helpers/kubernetes.js';
import { realSpark } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';

const spark = realSpark();
const s3Binary = process.env.SUBMISSION_SERVICE_S3_SERVER;
const skip = !spark ? 'no Spark virtualenv (scripts/setup.sh makes one)'
  : !s3Binary ? 'no S3 server (test/s3/build.sh; scripts/test.sh sets SUBMISSION_SERVICE_S3_SERVER)' : false;

const MiB = 1024 * 1024;

// Numbered lines in three steps (12, 6 and 3 MiB); between them it waits for a file of the test.
// The last line has no newline: the archive keeps that too.
const STEPS = `
import os, sys, time
gate = sys.argv[1]
n = 0
def write(mib):
    global n
    written = 0
    while written < mib * 1024 * 1024:
        line = 'line %08d INFO TaskSetManager: Finished task %d.0 in stage 3.0 %s\\n' % (n, n, 'x' * (n % 97))
        sys.stdout.write(line)
        written += len(line)
        n += 1
    sys.stdout.flush()
def wait(name):
    while not os.path.exists(os.path.join(gate, name)):
        time.sleep(0.05)
write(12)
wait('go-1')
write(6)
wait('go-2')
write(3)
sys.stdout.write('the last line, without its newline')
sys.stdout.flush()
`;

t.test('a running driver\'s log is archived while it runs, exactly, across a cut stream and a new leader', { skip, timeout: 600_000 }, async (t) => {
  const dir = tempDir(t, 'subsvc-log-follow-');
  const s3 = await startS3Server(s3Binary!, join(dir, 's3'));
  t.teardown(() => s3.stop());
  const bed = await startKubeBed(t, { rules: { archiveLogs: true } });
  const { namespace, clients } = bed;
  await bed.api.close(); // the controllers below, with the log archive, take its place
  const messages: string[] = [];
  const controller = () => new KubernetesCluster({
    clients: kubeClients(bed.testbed.kubeconfig), namespace, logArchive: new LogArchive(s3.store, 'spark-logs'),
    logFollow: { spoolDir: join(dir, 'spool') }, log: (message) => { messages.push(message); t.comment(message); },
  });
  let cluster = controller();
  await cluster.start();
  t.teardown(() => cluster.close());
  const api = await buildApi({ cluster, auth: { enabled: false, store: { verify: () => undefined } } });
  const url = await api.listen({ port: 0, host: '127.0.0.1' });
  t.teardown(() => api.close());
  const kubelet = new FakeKubelet({ clients, namespace, dataDir: join(dir, 'kubelet'), ...spark!, cores: 1 });
  await kubelet.start();
  t.teardown(() => kubelet.stop());

  const script = join(dir, 'steps.py');
  writeFileSync(script, STEPS);
  const submitted = await httpCall(url, 'POST', '/api/apps/', { jobName: 'steps', configOverrides: { type: 'Python', mainApplicationFile: `local://${script}`, arguments: [dir], executor: { cores: 1, instances: 1 } } });
  if (submitted.status !== 201) throw new Error(`submission answered ${submitted.status}: ${submitted.body}`);
  const appName = (submitted.json as { appName: string }).appName;
  const key = `spark-logs/${appName}/driver.log`;

  // What the store holds of the log while the pod runs: the parts of its unfinished upload, as any S3 client lists them.
  const client = new Client({ endPoint: '127.0.0.1', port: Number(new URL(s3.endpoint).port), useSSL: false, accessKey: s3.accessKey, secretKey: s3.secretKey, pathStyle: true });
  const stored = async () => {
    let most = 0;
    for await (const upload of client.listIncompleteUploads(s3.bucket, key, true)) most = Math.max(most, upload.size ?? 0);
    return most;
  };
  const running = async () => (await clients.core.readNamespacedPod({ name: appName, namespace })).status?.phase === 'Running';

  // Step 1 written (12 MiB), the driver waits: two full parts are in the store already.
  await eventually(stored, (bytes) => bytes >= 2 * FOLLOW_PART_BYTES, { timeoutMs: 300_000, intervalMs: 250, what: 'two parts of the running driver\'s log in the store' });
  t.ok(await running(), 'the driver still runs: the parts were sent while it ran');

  // The kubelet cuts the stream; the follower reads again, skips what it has, and goes on.
  t.ok(kubelet.dropLogStreams() >= 1, 'the follow stream was cut');
  writeFileSync(join(dir, 'go-1'), '');
  await eventually(stored, (bytes) => bytes >= 3 * FOLLOW_PART_BYTES, { timeoutMs: 120_000, intervalMs: 250, what: 'the third part after the cut' });
  t.ok(messages.some((m) => m.includes(appName) && /following again from byte [1-9]/.test(m)), 'the follower resumed after the cut');

  // Another controller takes over (this one stops and hands the Lease on): it goes on with the upload.
  await api.close();
  await cluster.close();
  const left = await stored();
  t.ok(left >= 3 * FOLLOW_PART_BYTES, `the stopped controller left its upload (${left} bytes) for the next leader`);
  const servedBefore = kubelet.servedLogBytes(appName);
  cluster = controller();
  await cluster.start();
  await eventually(async () => messages.some((m) => m.includes(appName) && /going on from byte [1-9]/.test(m)), (found) => found, { timeoutMs: 120_000, intervalMs: 250, what: 'the new leader to go on with the upload' });
  t.ok(await running(), 'the new leader took the upload over while the driver ran');

  writeFileSync(join(dir, 'go-2'), '');
  await eventually(() => clients.core.readNamespacedPod({ name: appName, namespace }), (pod) => pod.status?.phase === 'Succeeded' && !pod.metadata?.finalizers?.includes(LOG_ARCHIVE_FINALIZER), { timeoutMs: 120_000, intervalMs: 250, what: 'the driver to end and be let go' });
  t.ok(messages.some((m) => m.includes(`${appName} driver (followed)`)), 'the follow completed the archive (no whole read at the end)');

  const logFile = join(dir, 'kubelet', 'logs', `${appName}.log`);
  t.ok(existsSync(logFile), 'the kubelet\'s copy of the log');
  const expected = readFileSync(logFile);
  const chunks: Buffer[] = [];
  for await (const chunk of (await s3.store.read(key))!) chunks.push(chunk as Buffer);
  const archived = Buffer.concat(chunks);
  t.ok(expected.length > 21 * MiB, `the log is ${expected.length} bytes`);
  t.equal(archived.length, expected.length, 'the archive has as many bytes as the log');
  t.ok(archived.equals(expected), 'the archive is the log byte for byte (no line lost or doubled)');
  t.equal(await stored(), 0, 'no unfinished upload is left');
  const servedAfter = kubelet.servedLogBytes(appName) - servedBefore;
  t.ok(servedAfter < expected.length - FOLLOW_PART_BYTES, `the new leader read ${servedAfter} bytes of the ${expected.length}-byte log: not again what the first one had sent`);
  t.notOk(await s3.store.size(`${key}.follow.json`), 'the follow\'s state went with the completed upload');
});

// 8 MiB of lines, then the end: for the size cap.
// 8 MiB, then the driver waits for the test's go (a file): a followed log must still be followed
// when it ends, however slowly the follower gets to it on a busy machine.
const eightMib = (go: string) => `
import os, sys, time
n = 0
written = 0
while written < 8 * 1024 * 1024:
    line = 'line %08d %s\\n' % (n, 'y' * (n % 61))
    sys.stdout.write(line)
    written += len(line)
    n += 1
sys.stdout.flush()
while not os.path.exists(${JSON.stringify(go)}):
    time.sleep(0.1)
`;

t.test('an archived log is cut at the size cap with a line that says so, followed or read whole at the end', { skip, timeout: 600_000 }, async (t) => {
  const dir = tempDir(t, 'subsvc-log-cap-');
  const s3 = await startS3Server(s3Binary!, join(dir, 's3'));
  t.teardown(() => s3.stop());
  const bed = await startKubeBed(t, { rules: { archiveLogs: true } });
  const { namespace, clients } = bed;
  await bed.api.close();
  const messages: string[] = [];
  const maxLogBytes = 6 * MiB;
  const kubelet = new FakeKubelet({ clients, namespace, dataDir: join(dir, 'kubelet'), ...spark!, cores: 1 });
  await kubelet.start();
  t.teardown(() => kubelet.stop());
  const script = join(dir, 'eight.py');
  const go = join(dir, 'go');
  writeFileSync(script, eightMib(go));

  // followLimit 1: the log is followed; 0: read whole when the pod ends. The cap holds either way.
  for (const followLimit of [1, 0]) {
    const cluster = new KubernetesCluster({
      clients: kubeClients(bed.testbed.kubeconfig), namespace, logArchive: new LogArchive(s3.store, 'spark-logs'),
      logFollow: { spoolDir: join(dir, 'spool'), followLimit, maxLogBytes }, log: (message) => { messages.push(message); t.comment(message); },
    });
    await cluster.start();
    const api = await buildApi({ cluster, auth: { enabled: false, store: { verify: () => undefined } } });
    const url = await api.listen({ port: 0, host: '127.0.0.1' });
    const submitted = await httpCall(url, 'POST', '/api/apps/', { jobName: `eight-${followLimit}`, configOverrides: { type: 'Python', mainApplicationFile: `local://${script}`, executor: { cores: 1, instances: 1 } } });
    if (submitted.status !== 201) throw new Error(`submission answered ${submitted.status}: ${submitted.body}`);
    const appName = (submitted.json as { appName: string }).appName;
    // Followed: the driver ends once the follower has its log (a spool file, or the follow already
    // done at the cap); read whole: it ends at once.
    if (followLimit > 0) {
      await eventually(async () => (existsSync(join(dir, 'spool')) && readdirSync(join(dir, 'spool')).some((f) => f.endsWith('.part'))) || messages.some((m) => m.includes(`${appName} driver (followed)`)),
        (following) => following, { timeoutMs: 300_000, intervalMs: 100, what: 'the follower to take the running driver\'s log' });
    }
    writeFileSync(go, '');
    const ended = await eventually(() => clients.core.readNamespacedPod({ name: appName, namespace }), (pod) => pod.status?.phase !== 'Running' && pod.status?.phase !== 'Pending' && !pod.metadata?.finalizers?.includes(LOG_ARCHIVE_FINALIZER), { timeoutMs: 300_000, intervalMs: 250, what: 'the driver to end and be let go' });
    t.equal(ended.status?.phase, 'Succeeded', 'the driver wrote its log and ended');
    await api.close();
    await cluster.close();

    const log = readFileSync(join(dir, 'kubelet', 'logs', `${appName}.log`));
    t.ok(log.length > maxLogBytes, `the log (${log.length} bytes) is above the cap`);
    const chunks: Buffer[] = [];
    for await (const chunk of (await s3.store.read(`spark-logs/${appName}/driver.log`))!) chunks.push(chunk as Buffer);
    const archived = Buffer.concat(chunks);
    t.ok(archived.equals(Buffer.concat([log.subarray(0, maxLogBytes), Buffer.from(capMarker(maxLogBytes))])), `followLimit ${followLimit}: the first ${maxLogBytes} bytes, then the line that says the log was cut`);
    const how = followLimit > 0 ? `${appName} driver (followed)` : `${appName} driver (${archived.length} bytes)`;
    t.ok(messages.some((m) => m.includes(how)), `followLimit ${followLimit}: ${followLimit > 0 ? 'followed' : 'read whole at the end'}`);
  }
});
