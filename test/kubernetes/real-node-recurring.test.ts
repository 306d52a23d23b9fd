// Runs alone (scripts/test.sh): a real node is one per machine, and its Spark pods share two cores.
//
// Jobs that recur (issue 26) on the real node: kubelet and containerd run the driver and executor
// pods of the Spark runtime image, the API with its controller (retries, the Schedule controller)
// in this process (test/helpers/spark-node.ts). The programs are this repository's
// (test/fixtures/recurring), served over HTTP from this process: spark-submit fetches its main file.
//   - retries: an executor out of memory makes attempt 2 with twice the executor memory, which
//     COMPLETES; an app that exits 1 with retries 1 ends FAILED after 2 attempts; an evicted
//     driver pod is retried without counting as an attempt;
//   - schedules: every minute, one run per tick named after it, 3 runs; paused, none; beside it a
//     Forbid schedule whose runs outlast a minute skips the ticks that fall while one runs.
// The schedules wait for minute ticks most of their time: the retries run on the node meanwhile
// (two subtests at once), so the file lasts about as long as the longer of the two.
// Everything waits for states (polling), never for a time.
import t, { type Test } from 'tap';
import { PI_PY, sparkNodeUnavailable, startSparkNodeBed } from '../helpers/spark-node.js';
import { type App, loadAverage, MINUTE, type Node, nodeCalls, RUN_MS, seconds, servePrograms, TERMINAL, tickTime } from '../helpers/recurring-node.js';
import { eventually } from '../helpers/kubernetes.js';
import { LABEL_ATTEMPT, SCHEDULE_TICK_LABEL, scheduledRunName } from '../../domain/index.js';

const unavailable = sparkNodeUnavailable();
t.setTimeout(60 * 60_000);

/** Runs of the every-minute schedule waited for before it is paused. */
const TICKS = 3;

/** An application's attempts in a line, for the test's output (the README's figures). */
const describe = (a: App) => (a.attempts ?? []).map((x) => `attempt ${x.attempt} (${x.driverPod}): ${seconds(x.startedAt, x.endedAt)} s, ${x.reason}, exit ${x.exitCode}${x.memory?.executor ? `, executor ${x.memory.executor}` : ''}`).join('; ');

async function outOfMemoryRetried(t: Test, { bed, program, submit, ended, log }: Node): Promise<void> {
  const appName = await submit(t, 'oom-executor', {
    type: 'Python', mainApplicationFile: program('allocates.py'), arguments: ['600'],
    driver: { memory: '512m' }, executor: { cores: 1, instances: 1, memory: '512m' },
    // One failed task ends the job: attempt 1 does not start three more executors to fail again.
    engineConf: { 'spark.task.maxFailures': '1' },
    restartPolicy: { type: 'OnFailure', retries: 2, retryIntervalSeconds: 1 },
  });
  const done = await ended(appName);
  const text = await log(appName);
  t.comment(`${appName}: ${describe(done)} (load ${loadAverage()})`);
  t.equal(done.state, 'COMPLETED', done.state === 'COMPLETED' ? 'COMPLETED' : `${done.stateDetail}\n${text.slice(-2_000)}`);
  t.same(done.attempts?.map((a) => [a.attempt, a.reason, a.counted]), [[1, 'OOMKilled (executor)', true], [2, 'Completed', true]], 'both attempts, with their reasons');
  const [first, second] = done.attempts ?? [];
  t.equal(first?.memory?.executor, '512m', 'attempt 1 ran with the executor memory asked');
  t.equal(second?.memory?.executor, '1024m', 'attempt 2 with twice as much');
  t.equal(done.config.executor?.memory, '1024m', 'the config shows what attempt 2 ran with');
  t.ok(done.attempts?.every((a) => a.startedAt && a.endedAt), 'each attempt has its times');
  t.match(done.transitions.find((x) => x.state === 'PENDING' && x.detail)?.detail ?? '', /attempt 1: the executor ran out of memory .*attempt 2 \(retry 1 of 2\) with executor memory 1024m instead of 512m/, 'why attempt 2 came, and with what');
  t.equal(second?.driverPod, `${appName}-attempt-2`);
  const pod = await bed.core.readNamespacedPod({ name: second!.driverPod, namespace: bed.namespace });
  t.equal(pod.metadata?.labels?.[LABEL_ATTEMPT], '2', 'attempt 2 ran in a driver pod of its own');
  t.match(JSON.stringify(pod.spec?.containers[0]?.args), /spark\.executor\.memory=1024m/, 'whose executors were given 1024m');
  t.match(text, /built a string of 629145600 bytes/, 'attempt 2 did the work');
}

async function exitsOneFails(t: Test, { submit, ended, log }: Node): Promise<void> {
  // pi.py fails on its argument before it starts Spark: the driver exits 1.
  const appName = await submit(t, 'exits-one', { type: 'Python', mainApplicationFile: PI_PY, arguments: ['not-a-number'], driver: { memory: '512m' }, restartPolicy: { type: 'OnFailure', retries: 1, retryIntervalSeconds: 1 } });
  const done = await ended(appName);
  t.comment(`${appName}: ${describe(done)} (load ${loadAverage()})`);
  t.equal(done.state, 'FAILED');
  t.same(done.attempts?.map((a) => [a.attempt, a.reason, a.exitCode, a.counted]), [[1, 'Error', 1, true], [2, 'Error', 1, true]], 'both attempts, exit code 1 each');
  t.match(done.stateDetail, /attempt 2 was the last \(restartPolicy\.retries 1\)/);
  t.match(await log(appName), /ValueError/, 'the driver log says why');
}

async function evictionNotCounted(t: Test, { bed, program, submit, ended, log }: Node): Promise<void> {
  // retries 0: had the eviction counted, attempt 1 would have been the last.
  const appName = await submit(t, 'evicted', { type: 'Python', mainApplicationFile: program('sleeps.py'), arguments: ['30'], driver: { memory: '512m' }, restartPolicy: { type: 'OnFailure', retries: 0 } });
  await eventually(() => log(appName), (text) => /sleeping 30/.test(text), { what: `${appName}'s driver to run its program`, timeoutMs: RUN_MS, intervalMs: 1_000 });
  // As `kubectl drain` does: the Eviction API (the pod gets its DisruptionTarget condition, then goes).
  await bed.core.createNamespacedPodEviction({ name: appName, namespace: bed.namespace, body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: appName, namespace: bed.namespace } } });
  const done = await ended(appName);
  t.comment(`${appName}: ${describe(done)} (load ${loadAverage()})`);
  t.equal(done.state, 'COMPLETED', `COMPLETED (${done.stateDetail})`);
  const [first, second] = done.attempts ?? [];
  t.match(first, { attempt: 1, counted: false }, `attempt 1 is not counted (${first?.reason})`);
  t.ok(first?.reason === 'Evicted' || first?.reason === 'DriverDeleted', `its reason is the eviction (${first?.reason})`);
  t.match(second, { attempt: 2, reason: 'Completed', counted: true });
  t.match(await log(appName), /slept 30/, 'attempt 2 ran to its end');
}

async function schedulesOnTheNode(t: Test, { bed, program, app, ended, log, runs, schedule }: Node): Promise<void> {
  const history = { successfulRunsHistoryLimit: 10, failedRunsHistoryLimit: 10 };
  const every = { name: 'counts-every-minute', schedule: '* * * * *', jobName: 'counts', concurrencyPolicy: 'Allow', ...history, configOverrides: { type: 'Python', mainApplicationFile: program('counts.py'), driver: { memory: '512m' } } };
  // Each run sleeps 70 s: longer than a minute, so at least one tick falls while it runs (its
  // second run, after the first ended, then comes two or three ticks after the first).
  const forbid = { name: 'sleeps-forbid', schedule: '* * * * *', jobName: 'sleeps', concurrencyPolicy: 'Forbid', ...history, configOverrides: { type: 'Python', mainApplicationFile: program('sleeps.py'), arguments: ['70'], driver: { memory: '512m' } } };
  for (const body of [every, forbid]) {
    const res = await bed.call('POST', '/api/schedules/', body);
    t.equal(res.status, 201, `${body.name} created: ${res.body.slice(0, 300)}`);
  }
  // The Forbid schedule's outcomes as they come (each tick overwrites the last one).
  const outcomes = new Set<string>();
  const watchForbid = async () => { const outcome = (await schedule(forbid.name)).lastOutcome; if (outcome) outcomes.add(outcome); };

  // Three ticks show one run per tick in consecutive minutes as well as more would; each more is a minute.
  const made = await eventually(async () => { await watchForbid(); return runs(every.name); }, (items) => items.length >= TICKS, { what: `${TICKS} runs of the every-minute schedule`, timeoutMs: 12 * MINUTE, intervalMs: 1_000 });
  const paused = await bed.call('POST', `/api/schedules/${every.name}/pause`);
  t.equal(paused.status, 200, 'paused');
  const pausedAt = Date.now();
  t.equal(made.length, TICKS, `one run per tick: ${TICKS} runs after ${TICKS} ticks`);
  const ticks = made.map((run) => run.labels[SCHEDULE_TICK_LABEL]!);
  const tickTimes = ticks.map(tickTime);
  t.same(tickTimes.slice(1).map((time, i) => time - tickTimes[i]!), ticks.slice(1).map(() => MINUTE), `consecutive minutes, one run each (${ticks.join(', ')})`);
  t.same(made.map((run) => run.appName), tickTimes.map((time, i) => scheduledRunName(every.jobName, every.name, new Date(time), made[i]!.submittedBy ?? null)), 'each run named after its tick');

  // Paused: a tick passes (the Forbid schedule, still active, settles a later one) and makes no run.
  await eventually(async () => { await watchForbid(); return schedule(forbid.name); },
    (s) => Date.parse(s.lastScheduleTime ?? '') > pausedAt, { what: 'a tick after the pause', timeoutMs: 3 * MINUTE, intervalMs: 1_000 });
  t.equal((await runs(every.name)).length, TICKS, 'no run once paused');
  t.equal((await schedule(every.name)).nextRunAt, null, 'no next run while paused');

  const ends = await Promise.all(made.map((run) => ended(run.appName)));
  t.same(ends.map((run) => run.state), ends.map(() => 'COMPLETED'), 'every run COMPLETED');
  t.match(await log(made[0]!.appName), /counted 1000/, 'a run did its Spark job');
  t.comment(`every minute: runs took ${ends.map((run) => `${seconds(run.startedAt, run.endedAt)} s`).join(', ')} (load ${loadAverage()})`);

  // Forbid: no two runs at once, and ticks that fell while one ran made none. Its second run
  // comes at the first tick after its first run ended: waited for, however loaded the node.
  const sleeps = await eventually(async () => { await watchForbid(); return runs(forbid.name); }, (items) => items.length >= 2,
    { what: 'the Forbid schedule\'s second run', timeoutMs: 6 * MINUTE, intervalMs: 1_000 });
  await bed.call('POST', `/api/schedules/${forbid.name}/pause`);
  const settled = await Promise.all(sleeps.map((run) => TERMINAL.includes(run.state) ? run : app(run.appName)));
  t.ok(sleeps.length >= 2, `the Forbid schedule ran again after its first run ended (${sleeps.map((run) => run.labels[SCHEDULE_TICK_LABEL]).join(', ')})`);
  for (let i = 1; i < sleeps.length; i++) {
    const before = settled[i - 1]!;
    t.ok(before.endedAt && Date.parse(before.endedAt) <= tickTime(sleeps[i]!.labels[SCHEDULE_TICK_LABEL]),
      `run ${i + 1}'s tick came after run ${i} ended`);
  }
  t.ok([...outcomes].some((o) => /Forbid/.test(o)), `ticks were skipped while a run lasted: ${[...outcomes].filter((o) => /Forbid/.test(o)).slice(0, 2).join(' | ')}`);
  // The last run may still sleep: stopped, so that the node is free.
  for (const run of settled.filter((r) => !TERMINAL.includes(r.state))) await bed.call('POST', `/api/apps/${run.appName}/stop`);
}

// jobs: 2: the schedules and the retries side by side (each subtest's output comes whole when it ends).
t.test('jobs that recur on the real node', { skip: unavailable, jobs: 2 }, async (t) => {
  const bed = await startSparkNodeBed(t, { schedules: true });
  const node = nodeCalls(bed, await servePrograms(t));
  t.test(`schedules: every minute one run per tick for ${TICKS} ticks, none once paused; Forbid skips ticks while a run lasts`, (t) => schedulesOnTheNode(t, node));
  t.test('retries', async (t) => {
    await t.test('an executor out of memory: attempt 2 runs with twice the executor memory and COMPLETES', (t) => outOfMemoryRetried(t, node));
    await t.test('an app that exits 1 with retries 1: FAILED after 2 attempts, both listed', (t) => exitsOneFails(t, node));
    await t.test('an evicted driver pod is retried without counting as an attempt', (t) => evictionNotCounted(t, node));
  });
});
