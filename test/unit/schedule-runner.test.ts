// The scheduler loop (cluster/schedules/runner.ts) on a fake clock, over a fake cluster that
// keeps records in memory and refuses a second create of a name (409), as both real ones do.
// Hours pass in milliseconds; nothing waits for real time.
import t from 'tap';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { type AppRecord, ConflictError, type CreateResult, type ListQuery } from '../../cluster/cluster.js';
import { matchesQuery, pageOf } from '../../cluster/paging.js';
import { FileScheduleStore } from '../../cluster/schedules/file-schedule-store.js';
import { ScheduleRunner, type SchedulerClock } from '../../cluster/schedules/runner.js';
import { emptyStatus } from '../../cluster/schedules/schedule-store.js';
import { ANNOTATION_SUBMITTED_BY, applicationLabels, LABEL_JOB, scheduledRunName } from '../../domain/index.js';
import type { Schedule } from '../../schemas/index.js';
import { tempDir } from '../helpers/temp.js';
import { SchedulerTestClock as FakeClock } from '../helpers/scheduler-clock.js';

class FakeCluster {
  readonly records = new Map<string, AppRecord>();
  readonly stopped: string[] = [];
  readonly whys: Array<string | undefined> = [];
  constructor(private readonly clock: SchedulerClock) {}
  async createDriver(pod: V1Pod): Promise<CreateResult> {
    const appName = pod.metadata!.name!;
    if (this.records.has(appName)) throw new ConflictError(`application ${appName} exists`);
    const record = {
      appName, jobName: pod.metadata!.labels![LABEL_JOB], configTemplateName: '', config: {}, state: 'RUNNING', createdAt: this.clock.now().toISOString(),
      startedAt: null, endedAt: null, runningExecutors: 0, namespace: 'local', labels: applicationLabels(pod.metadata!.labels),
      submittedBy: pod.metadata!.annotations?.[ANNOTATION_SUBMITTED_BY] ?? null,
    } satisfies AppRecord;
    this.records.set(appName, record);
    return { ok: true, record, pod };
  }
  async get(appName: string) { return this.records.get(appName); }
  async list(query: ListQuery) { return pageOf([...this.records.values()].filter((r) => matchesQuery(r, query)), query); }
  async stop(appName: string, why?: string) { this.stopped.push(appName); this.whys.push(why); return this.end(appName, 'KILLED'); }
  async delete(appName: string) { return this.records.delete(appName); }
  end(appName: string, state: AppRecord['state'] = 'COMPLETED') {
    const record = this.records.get(appName)!;
    record.state = state;
    return record;
  }
  names() { return [...this.records.keys()].sort(); }
}

async function setup(t: { teardown(fn: () => unknown): void }, spec: Partial<Schedule>, start = '2026-11-27T10:00:30Z', options: { createdBy?: string; log?: (message: string) => void } = {}) {
  const dir = tempDir(t);
  const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };
  const store = new FileScheduleStore(join(dir, 'schedules'), { log: quiet });
  await store.create({ spec: { name: 'every-minute', schedule: '* * * * *', jobName: 'etl', ...spec }, createdBy: options.createdBy ?? 'key-a', createdAt: start, status: emptyStatus() });
  const clock = new FakeClock(Date.parse(start));
  const cluster = new FakeCluster(clock);
  const runner = new ScheduleRunner({ store, cluster, clock, log: (_level, message) => options.log?.(message) });
  runner.start();
  t.teardown(() => runner.stop());
  return { store, clock, cluster, runner, dir, quiet };
}

t.test('every minute for 5 minutes: one run per tick, named after it, as the owner', async (t) => {
  const { clock, cluster, runner, store } = await setup(t, {});
  await clock.until('2026-11-27T10:05:10Z', runner);
  t.same(cluster.names(), [1, 2, 3, 4, 5].map((m) => `etl-20261127-100${m}00-${cluster.names()[0].slice(-10)}`));
  for (let i = 0; i < 3; i++) runner.wake(); // more passes at the same time make nothing more
  await clock.until('2026-11-27T10:05:20Z', runner);
  t.equal(cluster.records.size, 5, 'still one run per tick');
  const last = cluster.records.get(cluster.names()[4])!;
  t.same(last.labels, { 'schedule.submission-service.io/name': 'every-minute', 'schedule.submission-service.io/tick': '20261127T100500Z' });
  t.equal(last.submittedBy, 'key-a', 'submitted as the schedule\'s owner');
  t.match((await store.get('every-minute'))!.status, { lastScheduleTime: '2026-11-27T10:05:00.000Z', lastRunName: last.appName });
});

t.test('Forbid skips ticks while a run is active; Replace stops it', async (t) => {
  const forbid = await setup(t, { concurrencyPolicy: 'Forbid' });
  await forbid.clock.until('2026-11-27T10:03:10Z', forbid.runner);
  t.equal(forbid.cluster.records.size, 1, 'the first run is still active at 10:02 and 10:03');
  t.match((await forbid.store.get('every-minute'))!.status.lastOutcome, /10:03:00.000Z skipped: etl-20261127-100100-\w+ still running \(Forbid\)/);
  forbid.cluster.end(forbid.cluster.names()[0]);
  await forbid.clock.until('2026-11-27T10:04:10Z', forbid.runner);
  t.match(forbid.cluster.names(), [/-100100-/, /-100400-/], 'runs again once it ended');
  const replace = await setup(t, { concurrencyPolicy: 'Replace' });
  await replace.clock.until('2026-11-27T10:02:10Z', replace.runner);
  t.equal(replace.cluster.records.size, 2);
  t.match(replace.cluster.stopped, [/-100100-/], 'the 10:01 run was stopped for the 10:02 one');
  t.same(replace.cluster.whys, ['schedule every-minute replaced it with its next run (concurrencyPolicy Replace)'], 'its record says why');
});

t.test('a runner does not count runs of other keys that carry the schedule label', async (t) => {
  const { clock, cluster, runner } = await setup(t, { concurrencyPolicy: 'Forbid' });
  await cluster.createDriver({ metadata: { name: 'forged', labels: { [LABEL_JOB]: 'etl', 'schedule.submission-service.io/name': 'every-minute' }, annotations: { [ANNOTATION_SUBMITTED_BY]: 'key-b' } } });
  await clock.until('2026-11-27T10:01:10Z', runner);
  t.equal(cluster.records.size, 2, 'another key\'s labelled app does not make Forbid skip');
});

t.test('suspended: no runs; on resume, missed ticks follow startingDeadlineSeconds', async (t) => {
  const { clock, cluster, runner, store } = await setup(t, { suspend: true, startingDeadlineSeconds: 20 });
  await clock.until('2026-11-27T10:30:30Z', runner);
  t.equal(cluster.records.size, 0, 'a paused schedule makes none');
  await store.replace({ ...(await store.get('every-minute'))!.spec, suspend: false });
  runner.wake();
  await clock.until('2026-11-27T10:30:40Z', runner);
  t.equal(cluster.records.size, 0, '10:30 is 30 s late, past its 20 s deadline: missed');
  t.match((await store.get('every-minute'))!.status.lastOutcome, /10:30:00.000Z missed/);
  await clock.until('2026-11-27T10:31:05Z', runner);
  t.match(cluster.names(), [/-103100-/], 'the next tick runs');
});

t.test('ticks missed while the service was down: the latest runs, within the deadline; a crash after a run makes no second one', async (t) => {
  const first = await setup(t, { startingDeadlineSeconds: 45 });
  await first.clock.until('2026-11-27T10:02:10Z', first.runner);
  await first.runner.stop();
  t.equal(first.cluster.records.size, 2);
  // Down from 10:02:10 to 10:07:30: 10:03 … 10:07 were due; 10:07 is 30 s late, within 45 s.
  const clock = new FakeClock(Date.parse('2026-11-27T10:07:30Z'));
  const store = new FileScheduleStore(join(first.dir, 'schedules'), { log: first.quiet });
  const second = new ScheduleRunner({ store, cluster: first.cluster, clock });
  second.start();
  t.teardown(() => second.stop());
  await clock.until('2026-11-27T10:07:31Z', second);
  t.match(first.cluster.names(), [/-100100-/, /-100200-/, /-100700-/]);
  t.match((await store.get('every-minute'))!.status.lastOutcome, /ran .*\(4 earlier tick\(s\) missed\)/);
  // A run made but not recorded (a crash in between): the same tick again meets its own name.
  await store.setStatus('every-minute', { ...(await store.get('every-minute'))!.status, lastScheduleTime: '2026-11-27T10:06:00.000Z' });
  second.wake();
  await clock.until('2026-11-27T10:07:40Z', second);
  t.equal(first.cluster.records.size, 3, 'no second run of 10:07');
  t.match((await store.get('every-minute'))!.status.lastOutcome, /made before: the name settled it/);
});

t.test('history limits: ended runs beyond them are deleted', async (t) => {
  const { clock, cluster, runner } = await setup(t, { successfulRunsHistoryLimit: 2, failedRunsHistoryLimit: 0 });
  for (const minute of [1, 2, 3, 4]) {
    await clock.until(`2026-11-27T10:0${minute}:10Z`, runner);
    const latest = cluster.names().find((n) => n.includes(`-100${minute}00-`))!;
    cluster.end(latest, minute === 2 ? 'FAILED' : 'COMPLETED');
  }
  await clock.until('2026-11-27T10:05:10Z', runner);
  t.match(cluster.names(), [/-100300-/, /-100400-/, /-100500-/], 'the failed one and the oldest completed one went; the running one stays');
});

t.test('another key\'s application holding a tick\'s name does not take the tick: the run is made under its next name, and said', async (t) => {
  const logged: string[] = [];
  const { clock, cluster, runner, store, dir, quiet } = await setup(t, {}, '2026-11-27T10:00:30Z', { log: (message) => logged.push(message) });
  const tick = new Date('2026-11-27T10:01:00Z');
  const first = scheduledRunName('etl', 'every-minute', tick, 'key-a');
  // Key B made an application under the name 10:01 tries first (a schedule of its own whose name
  // digests alike), even with the victim's schedule labels: labels alone are not the owner's.
  await cluster.createDriver({ metadata: { name: first, labels: { [LABEL_JOB]: 'etl', 'schedule.submission-service.io/name': 'every-minute', 'schedule.submission-service.io/tick': '20261127T100100Z' }, annotations: { [ANNOTATION_SUBMITTED_BY]: 'key-b' } } });
  await clock.until('2026-11-27T10:01:10Z', runner);
  const own = [...cluster.records.values()].filter((r) => r.submittedBy === 'key-a');
  t.equal(own.length, 1, 'the 10:01 tick made its run as key A');
  t.not(own[0]?.appName, first, 'under another name than the one key B holds');
  t.match(own[0]?.labels, { 'schedule.submission-service.io/tick': '20261127T100100Z' });
  t.equal(cluster.records.get(first)?.submittedBy, 'key-b', 'key B\'s application is left alone');
  const status = (await store.get('every-minute'))!.status;
  t.equal(status.lastRunName, own[0]?.appName);
  t.match(status.lastOutcome, new RegExp(`ran ${own[0]?.appName}.*the name ${first} held by another key's application`), 'the status says the name was held');
  t.match(logged.join('\n'), new RegExp(`the name ${first} is held by ${first}.*submitted by key-b`), 'and the log');
  // A new leader redoing 10:01 (the status lost) meets key B's name, then this tick's own run: no second run.
  await runner.stop();
  const secondStore = new FileScheduleStore(join(dir, 'schedules'), { log: quiet });
  await secondStore.setStatus('every-minute', { ...status, lastScheduleTime: '2026-11-27T10:00:30.000Z' });
  const second = new ScheduleRunner({ store: secondStore, cluster, clock });
  second.start();
  t.teardown(() => second.stop());
  await clock.until('2026-11-27T10:01:20Z', second);
  t.equal([...cluster.records.values()].filter((r) => r.submittedBy === 'key-a').length, 1, 'still one run of 10:01 after a leader change');
  t.match((await secondStore.get('every-minute'))!.status.lastOutcome, /ran .*made before: the name settled it/);
});
