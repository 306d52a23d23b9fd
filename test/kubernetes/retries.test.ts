// Retries as new attempts in Kubernetes mode on the test bed (real apiserver, our webhook, the
// API's controller; no kubelet: the fakeKubelet test double writes the pods' ends). An executor
// OOM-killed makes attempt 2 a new driver pod with more executor memory, created only after the
// executor of attempt 1 is gone, and the run COMPLETES; a deleted driver pod is retried without
// counting, and a user error after it ends the application FAILED with every attempt listed.
// A retried notebook kernel's driver gets a launcher token of its own, in a Secret of its own.
import t, { type Test } from 'tap';
import type { V1Pod } from '@kubernetes/client-node';
import {
  ANNOTATION_CONFIG, attemptLauncherToken, attemptPodName, bareDriverPod, KERNEL_ID_LABEL_KEY, LABEL_ATTEMPT, LAUNCHER_SECRET_KEY, LAUNCHER_SECRET_VOLUME,
  launcherSecretName,
} from '../../domain/index.js';
import { eventually, fakeKubelet, type KubeBed, sparkExecutorPod, startKubeBed } from '../helpers/kubernetes.js';

/** The secret the API shares with the notebook gateway (SUBMISSION_SERVICE_GATEWAY_SECRET). */
const GATEWAY_SECRET = 'retries-test-gateway-secret';

interface Attempt { attempt: number; driverPod: string; exitCode: number | null; reason: string; counted: boolean; startedAt: string | null; endedAt: string | null; memory?: { executor?: string } }

t.test('retries on the test bed', async (t) => {
  const bed = await startKubeBed(t, { api: { gatewaySecret: GATEWAY_SECRET } });
  const { core } = bed.clients;
  const { namespace } = bed;
  const submit = async (jobName: string, configOverrides: object) => {
    const res = await bed.call('POST', '/api/apps/', { jobName, configOverrides });
    t.equal(res.status, 201, `submitted ${jobName}: ${res.body.slice(0, 300)}`);
    return res.json.appName as string;
  };
  const app = async (name: string) => (await bed.call('GET', `/api/apps/${name}`)).json;
  const pod = (name: string) => core.readNamespacedPod({ name, namespace }).catch((error) => { if (error.code === 404) return undefined; throw error; });

  t.test('an executor OOM-killed: attempt 2 is a new driver pod with more executor memory, after the executor went, and it COMPLETES', async (t) => {
    const appName = await submit('oom-executor', { type: 'Python', mainApplicationFile: 'local:///app/job.py', restartPolicy: { type: 'OnFailure', retries: 1, retryIntervalSeconds: 0 } });
    const first = await fakeKubelet(bed.clients, namespace, appName, 'Running');
    t.equal(first.spec!.restartPolicy, 'Never', 'the kubelet never restarts the driver in place');
    // An executor of attempt 1 (as Spark writes it), killed by the kernel for its memory.
    const executor = await core.createNamespacedPod({ namespace, body: sparkExecutorPod(first, 1, namespace) });
    executor.status = {
      phase: 'Failed',
      containerStatuses: [{ name: executor.spec!.containers[0].name, image: 'x', imageID: 'fake-kubelet://x', ready: false, restartCount: 0, state: { terminated: { exitCode: 137, reason: 'OOMKilled', finishedAt: new Date() } } }],
    };
    await core.replaceNamespacedPodStatus({ name: executor.metadata!.name!, namespace, body: executor });
    await fakeKubelet(bed.clients, namespace, appName, 'Failed', 1);

    const second = attemptPodName(appName, 2);
    const created = await eventually(() => pod(second), (p) => p !== undefined, { what: 'the driver pod of attempt 2' }) as V1Pod;
    t.equal(await pod(executor.metadata!.name!), undefined, 'the executor of attempt 1 was gone before attempt 2 was created');
    t.equal(created.metadata!.labels![LABEL_ATTEMPT], '2');
    t.equal(created.spec!.restartPolicy, 'Never');
    const waiting = await app(appName);
    t.equal(waiting.attempt, 2, 'the state is about attempt 2');
    t.match(waiting.transitions.at(-1), { state: 'PENDING', detail: /attempt 1: the executor ran out of memory .*: attempt 2 \(retry 1 of 1\) with executor memory/ }, 'why it waits again');
    t.equal(waiting.attempts.length, 1, 'the API lists the attempts that started, as in local mode');
    const [one] = waiting.attempts as Attempt[];
    t.match(one, { attempt: 1, driverPod: appName, exitCode: 1, reason: 'OOMKilled (executor)', counted: true });
    const raised = JSON.parse(created.metadata!.annotations![ANNOTATION_CONFIG]!).executor.memory as string;
    t.not(raised, one!.memory?.executor, `attempt 2's executors get more memory (${one!.memory?.executor} -> ${raised})`);

    await fakeKubelet(bed.clients, namespace, second, 'Running');
    // Seen running before it ends: a loaded controller may otherwise read both changes at once.
    await eventually(() => app(appName), (a) => a.state === 'RUNNING', { what: 'attempt 2 RUNNING' });
    await fakeKubelet(bed.clients, namespace, second, 'Succeeded');
    const done = await eventually(() => app(appName), (a) => a.state === 'COMPLETED', { what: 'COMPLETED' });
    t.same(done.attempts.map((a: Attempt) => [a.attempt, a.driverPod, a.reason]), [[1, appName, 'OOMKilled (executor)'], [2, second, 'Completed']]);
    t.equal(done.config.executor.memory, raised, 'the config shows what attempt 2 ran with');
    t.ok(done.attempts.every((a: Attempt) => a.startedAt && a.endedAt), 'each attempt has its times');
    t.same(done.transitions.map((x: { state: string }) => x.state), ['PENDING', 'RUNNING', 'PENDING', 'RUNNING', 'COMPLETED']);
    const stored = (await bed.applications()).find((a) => a.metadata.name === appName);
    t.same(stored?.status.attempts, done.attempts, 'the Application\'s status holds what the API shows');
  });

  t.test('a deleted driver pod does not count; a user error after it, with retries 0, ends FAILED with both attempts', async (t) => {
    const appName = await submit('deleted-driver', { type: 'Python', mainApplicationFile: 'local:///app/job.py', restartPolicy: { type: 'OnFailure', retries: 0, retryIntervalSeconds: 0 } });
    await fakeKubelet(bed.clients, namespace, appName, 'Running');
    await core.deleteNamespacedPod({ name: appName, namespace, gracePeriodSeconds: 0 });
    const second = attemptPodName(appName, 2);
    await eventually(() => pod(second), (p) => p !== undefined, { what: 'the driver pod of attempt 2' });
    await fakeKubelet(bed.clients, namespace, second, 'Running');
    await fakeKubelet(bed.clients, namespace, second, 'Failed', 1);
    const failed = await eventually(() => app(appName), (a) => a.state === 'FAILED', { what: 'FAILED' });
    t.same(failed.attempts.map((a: Attempt) => [a.attempt, a.reason, a.counted]), [[1, 'DriverDeleted', false], [2, 'Error', true]]);
    t.match(failed.stateDetail, /attempt 2 was the last \(restartPolicy\.retries 0\)/);
    t.equal(await pod(`${appName}-attempt-3`), undefined, 'no third attempt');
  });

  t.test('a retried kernel\'s driver gets a launcher token of its own, in a Secret of its own', (t) => retriedKernel(t, bed, pod));
});

/** A kernel (its labels and one-time token, as the gateway submits it) whose first driver fails: attempt 2 gets its own credential. */
async function retriedKernel(t: Test, bed: KubeBed, pod: (name: string) => Promise<V1Pod | undefined>): Promise<void> {
  const { core } = bed.clients;
  const { namespace } = bed;
  const kernelId = '5f0e4c1a-2b3d-4e5f-8a9b-0c1d2e3f4a5b';
  const appName = `kernel-retry-${Date.now().toString(36)}`;
  // As the gateway submits a kernel: its labels (with the gateway's proof over HTTP) and its one-time token beside the config.
  const bare = bareDriverPod({
    appName, jobName: 'kernel-default', namespace,
    labels: { 'kernel.submission-service.io/kernel': 'true', [KERNEL_ID_LABEL_KEY]: kernelId },
    configOverrides: { type: 'Python', mainApplicationFile: 'local:///app/launcher.py', restartPolicy: { type: 'OnFailure', retries: 1, retryIntervalSeconds: 0 } },
  });
  const firstToken = 'F'.repeat(32);
  const created = await bed.api.cluster.createDriver(bare, { dryRun: false, launcherToken: firstToken });
  t.ok(created.ok, 'the kernel is submitted');
  const launcherVolume = (p: V1Pod) => p.spec?.volumes?.find((v) => v.name === LAUNCHER_SECRET_VOLUME)?.secret?.secretName;
  const token = async (name: string) => Buffer.from((await core.readNamespacedSecret({ name, namespace })).data![LAUNCHER_SECRET_KEY]!, 'base64').toString();

  const first = await fakeKubelet(bed.clients, namespace, appName, 'Running');
  t.equal(launcherVolume(first), launcherSecretName(appName), 'attempt 1 mounts the submission\'s Secret');
  await fakeKubelet(bed.clients, namespace, appName, 'Failed', 1);
  const second = attemptPodName(appName, 2);
  const retried = await eventually(() => pod(second), (p) => p !== undefined, { what: 'the driver pod of attempt 2' }) as V1Pod;
  const secretName = launcherVolume(retried);
  t.equal(secretName, launcherSecretName(second), 'attempt 2 mounts a Secret of its own');
  const secret = await core.readNamespacedSecret({ name: secretName!, namespace });
  const application = (await bed.applications()).find((a) => a.metadata.name === appName) as { metadata: { uid: string } } | undefined;
  t.match(secret.metadata!.ownerReferences, [{ kind: 'Application', name: appName, uid: application?.metadata.uid, controller: false }], 'owned by the Application, as the first one');
  t.equal(secret.immutable, true);
  t.equal(await token(secretName!), attemptLauncherToken(GATEWAY_SECRET, kernelId, 2), 'holding attempt 2\'s token, which the gateway takes once');
  t.equal(await token(launcherSecretName(appName)), firstToken, 'the first Secret still holds the first (spent) token');
  t.notOk(JSON.stringify(retried).includes(attemptLauncherToken(GATEWAY_SECRET, kernelId, 2)), 'the token is not in the pod');
  t.equal(retried.spec!.containers[0]!.env?.find((e) => e.name === 'SUBMISSION_SERVICE_KERNEL_TOKEN_FILE')?.value, '/var/run/submission-service/launcher/token', 'the driver\'s env names the file');
}
