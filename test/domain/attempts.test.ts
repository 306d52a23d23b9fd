// The retry decision (domain/attempts.ts): every way an attempt ends, under each policy.
import t from 'tap';
import type { ApplicationAttempt, ApplicationConfig } from '../../schemas/index.js';
import {
  admitPod, type AttemptEnd, attemptPodName, bareDriverPod, buildRules, decideAfterAttempt, endAttempt, LABEL_APP, LABEL_ATTEMPT, memoryBoundMib, nextAttemptDelayMs, nextAttemptDue, retryPolicy, withRetryOverrides,
} from '../../domain/index.js';

// 7680 MiB nodes: 4114 MiB of schedulable Spark memory (SPEC's rule 5); a bigger preemptible pool only executors may use.
const nodePools = [
  { cloudProvider: 'gce', instanceName: 'n1-standard-2', cpu: 2, memoryMib: 7680, preemptible: false },
  { cloudProvider: 'gce', instanceName: 'n1-highmem-4', cpu: 4, memoryMib: 26624, preemptible: true },
];
const rules = buildRules({ nodePools });

const onFailure = (retries: number, retryIntervalSeconds = 5): ApplicationConfig => ({
  restartPolicy: { type: 'OnFailure', retries, retryIntervalSeconds },
  driver: { cores: 1, memory: '1024m' },
  executor: { cores: 2, memory: '2048m' },
});
const at = '2026-11-27T00:00:00.000Z';
/** `n` ended attempts, the last one ended by `end`, as the cluster passes them. */
function history(ends: AttemptEnd[]): ApplicationAttempt[] {
  return ends.map((end, i) => endAttempt({ attempt: i + 1, startedAt: at }, end, at));
}
const exit1: AttemptEnd = { reason: 'Error', exitCode: 1, detail: 'exit code 1' };
const evicted: AttemptEnd = { reason: 'Evicted', exitCode: null, detail: 'the driver pod was evicted' };

t.test('defaults: Never, 3 retries, 10 s apart', async (t) => {
  t.same(retryPolicy(undefined), { type: 'Never', retries: 3, retryIntervalSeconds: 10 });
  t.same(retryPolicy({ restartPolicy: { type: 'OnFailure' } }), { type: 'OnFailure', retries: 3, retryIntervalSeconds: 10 });
});

t.test('a user error (exit 1) counts: retries 2 gives 3 attempts, then FAILED', async (t) => {
  const config = onFailure(2, 7);
  const first = decideAfterAttempt(config, history([exit1]), exit1, rules);
  t.match(first, { action: 'retry', attempt: 2, delaySeconds: 7, overrides: {} });
  t.match(first.detail, /attempt 1: exit code 1: attempt 2 \(retry 1 of 2\)/);
  t.match(decideAfterAttempt(config, history([exit1, exit1]), exit1, rules), { action: 'retry', attempt: 3 });
  const last = decideAfterAttempt(config, history([exit1, exit1, exit1]), exit1, rules);
  t.same(last, { action: 'end', state: 'FAILED', detail: 'exit code 1; attempt 3 was the last (restartPolicy.retries 2)' });
  t.equal(history([exit1])[0].counted, true);
});

t.test('Never: no retry, as today', async (t) => {
  const config = { ...onFailure(5), restartPolicy: { type: 'Never' as const, retries: 5 } };
  t.same(decideAfterAttempt(config, history([exit1]), exit1, rules), { action: 'end', state: 'FAILED', detail: 'exit code 1' });
  const oom: AttemptEnd = { reason: 'OOMKilled', exitCode: 137, role: 'executor', detail: 'exit code 137' };
  t.match(decideAfterAttempt(config, history([oom]), oom, rules), { action: 'end', state: 'FAILED' });
});

t.test('Always behaves as OnFailure; retries 0 never retries', async (t) => {
  t.match(decideAfterAttempt({ ...onFailure(1), restartPolicy: { type: 'Always', retries: 1 } }, history([exit1]), exit1, rules), { action: 'retry', attempt: 2 });
  t.match(decideAfterAttempt(onFailure(0), history([exit1]), exit1, rules), { action: 'end', state: 'FAILED' });
});

t.test('completed, stopped and unknown ends are never retried', async (t) => {
  const config = onFailure(3);
  for (const [reason, state] of [['Completed', 'COMPLETED'], ['Stopped', 'KILLED'], ['Unknown', 'UNKNOWN']] as const) {
    const end: AttemptEnd = { reason, exitCode: reason === 'Completed' ? 0 : null, detail: reason };
    t.same(decideAfterAttempt(config, history([end]), end, rules), { action: 'end', state, detail: reason }, reason);
  }
});

t.test('evicted, node lost, driver deleted: retried at once without counting', async (t) => {
  const config = onFailure(1, 30);
  for (const reason of ['Evicted', 'NodeLost', 'DriverDeleted'] as const) {
    const end: AttemptEnd = { reason, exitCode: null, detail: reason };
    const attempts = history([exit1, end]);
    t.equal(attempts[1].counted, false, `${reason} is not counted`);
    t.match(decideAfterAttempt(config, attempts, end, rules), { action: 'retry', attempt: 3, delaySeconds: 0 }, `${reason}: retried although the one retry was used`);
    t.match(decideAfterAttempt(config, history([exit1, end, exit1]), exit1, rules), { action: 'end', state: 'FAILED' }, 'the next counted failure ends it');
  }
});

t.test('uncounted attempts are bounded too', async (t) => {
  const many = history(Array.from({ length: 11 }, () => evicted));
  t.match(decideAfterAttempt(onFailure(3), many, evicted, rules), { action: 'end', state: 'FAILED', detail: /11 attempts ended this way/ });
  t.match(decideAfterAttempt(onFailure(3), many.slice(0, 10), evicted, rules), { action: 'retry', attempt: 11 });
});

t.test('OOMKilled: retried with twice the memory for that role, counted, the reason in the detail', async (t) => {
  const executor: AttemptEnd = { reason: 'OOMKilled', exitCode: 137, role: 'executor', detail: 'an executor was OOMKilled' };
  const decision = decideAfterAttempt(onFailure(2), history([executor]), executor, rules);
  t.match(decision, { action: 'retry', attempt: 2, delaySeconds: 5, overrides: { executor: { memory: '4096m' } } });
  t.match(decision.detail, /the executor ran out of memory .*executor memory 4096m instead of 2048m/);
  t.equal(history([executor])[0].reason, 'OOMKilled (executor)');
  t.equal(history([executor])[0].counted, true);
  const driver: AttemptEnd = { reason: 'OOMKilled', exitCode: 52, role: 'driver', detail: 'exit code 52' };
  t.match(decideAfterAttempt(onFailure(2), history([driver]), driver, rules), { action: 'retry', overrides: { driver: { memory: '2048m' } } });
});

t.test('OOMKilled: the memory stops at the node pools; at the bound it is not retried', async (t) => {
  t.equal(memoryBoundMib('driver', { cores: 1 }, rules), 4114, 'drivers: non-preemptible pools only');
  t.ok(memoryBoundMib('executor', { cores: 2 }, rules) > 4114, 'executors may use the preemptible pool');
  t.equal(memoryBoundMib('executor', { cores: 8 }, rules), 0, 'no pool has 8 cores');
  const driver: AttemptEnd = { reason: 'OOMKilled', exitCode: 137, role: 'driver', detail: 'exit code 137 (OOMKilled)' };
  const near = { ...onFailure(2), driver: { cores: 1, memory: '3g' } };
  t.match(decideAfterAttempt(near, history([driver]), driver, rules), { action: 'retry', overrides: { driver: { memory: '4114m' } } }, 'capped at the pool');
  const full = { ...onFailure(2), driver: { cores: 1, memory: '4114m' } };
  t.match(decideAfterAttempt(full, history([driver]), driver, rules), { action: 'end', state: 'FAILED', detail: /with the most a node pool holds \(4114m\): not retried/ });
});

t.test('retry overrides merge into the submission by field', async (t) => {
  const overrides: ApplicationConfig = { mainApplicationFile: 'local:///a.py', driver: { cores: 1, memory: '1g' }, executor: { cores: 2 } };
  t.same(withRetryOverrides(overrides, { driver: { memory: '2048m' } }), { mainApplicationFile: 'local:///a.py', driver: { cores: 1, memory: '2048m' }, executor: { cores: 2 } });
  t.same(overrides.driver, { cores: 1, memory: '1g' }, 'the input is untouched');
});

t.test('a later attempt of a 63-character application keeps a valid, deterministic pod name of its own', async (t) => {
  const appName = `${'a'.repeat(40)}-${'b'.repeat(22)}`;
  t.equal(appName.length, 63);
  const names = [2, 3, 12].map((n) => attemptPodName(appName, n));
  for (const name of names) {
    t.ok(name.length <= 63, `${name} fits a DNS label`);
    t.match(name, /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'a DNS-1123 label');
  }
  t.equal(attemptPodName(appName, 2), names[0], 'the same name every time: a second leader meets the first one\'s pod');
  t.equal(new Set(names).size, 3, 'each attempt its own name');
  t.not(attemptPodName(`${'a'.repeat(40)}-${'c'.repeat(22)}`, 2), names[0], 'another application with the same prefix, another name');
  t.ok(names[0]?.endsWith('-attempt-2'));
});

t.test('a later attempt (Kubernetes mode): its own pod name, hostname and Spark driver pod; the next one due after the interval', async (t) => {
  t.equal(attemptPodName('daily-1', 1), 'daily-1', 'the first attempt is named as the application');
  t.equal(attemptPodName('daily-1', 3), 'daily-1-attempt-3');
  const context = { rules: buildRules({ nodePools, namespace: 'spark', driverService: 'spark-drivers' }), templates: () => undefined, applications: () => undefined, newAppName: () => 'x' };
  const bare = bareDriverPod({ appName: 'daily-1', jobName: 'daily', namespace: 'spark', configOverrides: { type: 'Python', mainApplicationFile: 'local:///a.py', restartPolicy: { type: 'OnFailure' } } });
  const admitted = (pod: typeof bare) => {
    const admission = admitPod(pod, context);
    if (admission.outcome !== 'admitted') throw new Error(admission.outcome);
    return admission.pod;
  };
  const first = admitted(bare);
  t.equal(first.metadata!.name, 'daily-1');
  t.equal(first.spec!.restartPolicy, 'Never', 'never OnFailure: the kubelet does not restart a driver in place');
  const later = admitted({ ...bare, metadata: { ...bare.metadata, name: 'daily-1-attempt-2', labels: { ...bare.metadata!.labels, [LABEL_ATTEMPT]: '2' } } });
  t.equal(later.metadata!.name, 'daily-1-attempt-2');
  t.equal(later.metadata!.labels![LABEL_APP], 'daily-1', 'still the application\'s pod');
  t.equal(later.spec!.hostname, 'daily-1-attempt-2', 'its own DNS name under the drivers\' Service');
  const args = later.spec!.containers[0].args!.join(' ');
  t.match(args, 'spark.kubernetes.driver.pod.name=daily-1-attempt-2', 'Spark owns its executors by this pod');
  t.match(args, 'spark.driver.host=daily-1-attempt-2.spark-drivers.spark.svc');
  t.match(args, 'spark.kubernetes.executor.podNamePrefix=daily-1');

  const ended = (counted: boolean): ApplicationAttempt[] => [{ attempt: 1, startedAt: at, endedAt: at, counted }];
  t.equal(nextAttemptDue(ended(true), retryPolicy(onFailure(2, 30))), Date.parse(at) + 30_000);
  t.equal(nextAttemptDue(ended(false), retryPolicy(onFailure(2, 30))), Date.parse(at), 'an attempt that did not count is retried at once');
  t.equal(nextAttemptDelayMs(ended(true), retryPolicy(onFailure(2, 30))), 30_000, 'the delay after the end, a duration (the gateway times it on its own clock)');
  t.equal(nextAttemptDelayMs(ended(false), retryPolicy(onFailure(2, 30))), 0);
  t.equal(nextAttemptDelayMs([{ attempt: 1, startedAt: at, endedAt: null }], retryPolicy(onFailure(2, 30))), 0, 'nothing ended: nothing to wait for');
});
