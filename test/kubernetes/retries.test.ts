// Retries as new attempts in Kubernetes mode on the test bed (real apiserver, our webhook, the
// API's controller; no kubelet: the fakeKubelet test double writes the pods' ends). An executor
// OOM-killed makes attempt 2 a new driver pod with more executor memory, created only after the
// executor of attempt 1 is gone, and the run COMPLETES; a deleted driver pod is retried without
// counting, and a user error after it ends the application FAILED with every attempt listed.
import t from 'tap';
import type { V1Pod } from '@kubernetes/client-node';
import { ANNOTATION_CONFIG, attemptPodName, LABEL_ATTEMPT } from '../../domain/index.js';
import { eventually, fakeKubelet, sparkExecutorPod, startKubeBed } from '../helpers/kubernetes.js';

interface Attempt { attempt: number; driverPod: string; exitCode: number | null; reason: string; counted: boolean; startedAt: string | null; endedAt: string | null; memory?: { executor?: string } }

t.test('retries on the test bed', async (t) => {
  const bed = await startKubeBed(t);
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
});
