// A schedule in local mode with real Spark: the API, LocalCluster and the scheduler loop in this
// process, the loop's clock driven by the test (a minute passes when the test says so; each run
// is waited for, never timed). Every minute, Forbid: a tick while the last run is still RUNNING
// is skipped, the others make exactly one run each, named after their tick; once paused, ticks
// make none. Each run is a small PySpark job that ends once the test has written its release
// file: the first run stays RUNNING over the skipped tick because the test says so, not because
// a long computation (it was pi.py over 50 partitions) happened to outlast the tick.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { startTestApi } from '../helpers/api.js';
import { waitForState } from '../helpers/poll.js';
import { SchedulerTestClock } from '../helpers/scheduler-clock.js';
import { tempDir } from '../helpers/temp.js';
import { nextTick as nextTickAfter, RUN_DIGEST_CHARS } from '../../domain/index.js';
import { realSpark } from '../helpers/service.js';

const spark = realSpark();
const MINUTE = 60_000;

/** A real Spark job that holds (bounded) until the file named by its argument exists. */
const HOLDS = [
  'import os, sys, time',
  'from pyspark.sql import SparkSession',
  'spark = SparkSession.builder.getOrCreate()',
  'print("count", spark.range(10).count(), flush=True)',
  'deadline = time.time() + 600',
  'while not os.path.exists(sys.argv[1]) and time.time() < deadline:',
  '    time.sleep(0.2)',
  'spark.stop()',
].join('\n');

t.test('every minute with Forbid: one run per tick, a skipped tick while one runs, none once paused', { skip: spark ? false : 'no Spark virtualenv (scripts/setup.sh makes one)' }, async (t) => {
  // Starts at the real time, so the schedule's createdAt (written by the API) is "now" for the loop too.
  const clock = new SchedulerTestClock(Date.now());
  const api = await startTestApi(t, { cores: 2, spark, schedules: { clock, start: true } });
  const runner = api.schedules!.runner;
  const dir = tempDir(t); // not the data dir: local mode refuses main files there
  const job = join(dir, 'holds.py');
  const release = join(dir, 'release');
  writeFileSync(job, HOLDS);
  const created = await api.call('POST', '/api/schedules/', {
    name: 'pi-every-minute', schedule: '* * * * *', jobName: 'pi-sched', concurrencyPolicy: 'Forbid',
    configOverrides: { type: 'Python', mainApplicationFile: `local://${job}`, arguments: [release], executor: { cores: 1, instances: 1 } },
  });
  t.equal(created.status, 201, created.body);
  const runs = async () => (await api.call('GET', '/api/apps/?labelSelector=schedule.submission-service.io/name=pi-every-minute')).json.items as { appName: string; state: string; labels: Record<string, string> }[];
  const status = async () => (await api.call('GET', '/api/schedules/pi-every-minute')).json;
  // The loop's next tick on the test's clock (the API's nextRunAt is on the real one), and never
  // one before the schedule's creation: a slow start can put that in the clock's next minute.
  const createdAt = Date.parse(created.json.createdAt as string);
  const nextTick = () => clock.until(nextTickAfter({ schedule: '* * * * *' }, new Date(Math.max(clock.now().getTime(), createdAt)))!.getTime() + 1000, runner);

  await nextTick();
  const [first] = await runs();
  t.ok(first, 'the first tick made a run');
  t.match(first.appName, new RegExp(`^pi-sched-\\d{8}-\\d{6}-[a-z0-9]{${RUN_DIGEST_CHARS}}$`), 'named after its tick, with the digest of its owner and schedule');
  t.equal(first.labels['schedule.submission-service.io/tick'], (await status()).lastScheduleTime.replace(/\.000Z$/, 'Z').replaceAll('-', '').replaceAll(':', ''));
  await waitForState(() => api.getApp(first.appName), 'RUNNING', { timeoutMs: 120_000 });
  await nextTick();
  t.equal((await runs()).length, 1, 'a tick while the run is RUNNING makes none (Forbid)');
  t.match((await status()).lastOutcome, /skipped: .* still running \(Forbid\)/);
  writeFileSync(release, ''); // the first run ends; the later ones end as soon as they have counted
  t.equal((await waitForState(() => api.getApp(first.appName), 'COMPLETED', { timeoutMs: 300_000 })).state, 'COMPLETED');

  // One tick after the run ended, not two: each is a real driver, and one run per tick over
  // many ticks is test/unit/schedule-runner.test.ts's ("every minute for 5 minutes").
  await nextTick();
  runner.wake(); // a second pass within the same minute changes nothing
  await runner.idle();
  const made = await runs();
  t.equal(made.length, 2, 'tick 3: one more run');
  await waitForState(() => api.getApp(made[0].appName), 'COMPLETED', { timeoutMs: 300_000 });

  t.equal((await api.call('POST', '/api/schedules/pi-every-minute/pause')).status, 200);
  const before = (await runs()).length;
  await clock.until(clock.now().getTime() + 3 * MINUTE, runner);
  t.equal((await runs()).length, before, 'paused: three ticks, no run');
  t.equal((await status()).nextRunAt, null);
});
