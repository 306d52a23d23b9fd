// A schedule's ticks submit as its owner key and meet that key's limits exactly as its HTTP
// submissions do (submit-api/fair-share.ts, cluster/schedules/runner.ts): a schedule is no way
// around the cap on unfinished applications, the submissions per minute, or a revocation.
// Local mode with a fake spark-submit; the loop on a fake clock, so no test waits for a minute.
import t from 'tap';
import { FileKeyStore } from '../../submit-api/auth/key-store.js';
import { SCHEDULE_LABEL } from '../../domain/index.js';
import { startTestApi, type TestApi } from '../helpers/api.js';

import { fakeJob } from '../helpers/fake-spark-submit.js';
import { SchedulerTestClock } from '../helpers/scheduler-clock.js';
import { until } from '../helpers/poll.js';
import { tempDir } from '../helpers/temp.js';

/** What the helpers need of a test. */
interface TestLike { teardown(fn: () => unknown): void }

// The routes stamp a schedule's creation with the real time: the fake clock starts there, and moves from its first move's real time (setup).
const MINUTE = 60_000;
const longJob = () => fakeJob({ sleep: 600 });

async function setup(t: TestLike, fairShare: { applicationsPerKey?: number; submissionsPerMinute?: number }) {
  const keys = new FileKeyStore(tempDir(t));
  const start = Date.now();
  const clock = new SchedulerTestClock(start);
  const api = await startTestApi(t, { schedules: { clock, start: true }, auth: { enabled: true, store: keys }, fairShare });
  const as = (who: { key: string }) => ({ 'x-api-key': who.key });
  // Times count from the clock's first move, which each test makes after creating its schedules:
  // their creation is stamped with the real time, which a loaded machine moved past the start's
  // next minute once (the first tick fell before the schedules' first, and nothing ran).
  let origin: number | undefined;
  const from = () => (origin ??= Math.max(start, Date.now()));
  const at = (ms: number) => clock.until(from() + ms, api.schedules!.runner);
  // Five seconds past the k-th whole minute after the origin: one tick of '* * * * *' each, wherever
  // in its minute the test began (origin + 65 s crossed two minutes when it began past second 55).
  const tick = (k: number) => clock.until(Math.floor(from() / MINUTE) * MINUTE + k * MINUTE + 5_000, api.schedules!.runner);
  return { keys, at, tick, api, as };
}

/** Runs the schedule named `name` made (its label), whoever's. */
async function runsOf(api: TestApi, name: string) {
  return (await api.cluster.list({ labels: { [SCHEDULE_LABEL]: name }, limit: 100 })).items;
}

const lastOutcome = async (api: TestApi, name: string) => (await api.schedules!.store.get(name))?.status.lastOutcome ?? '';

t.test('a key at its cap on unfinished applications: its schedule\'s tick is refused (429), as its POST would be', async (t) => {
  const { keys, tick, api, as } = await setup(t, { applicationsPerKey: 1 });
  const alice = keys.create('user', 'alice');
  const held = await api.call('POST', '/api/apps/', { jobName: 'held', configOverrides: longJob() }, as(alice));
  t.equal(held.status, 201, held.body);
  t.equal((await api.call('POST', '/api/apps/', { jobName: 'held', configOverrides: longJob() }, as(alice))).status, 429, 'over HTTP: the second is refused');
  const created = await api.call('POST', '/api/schedules/', { name: 'every-minute', schedule: '* * * * *', jobName: 'etl', configOverrides: longJob() }, as(alice));
  t.equal(created.status, 201, created.body);
  await tick(1);
  t.same(await runsOf(api, 'every-minute'), [], 'the tick made no run');
  t.match(await lastOutcome(api, 'every-minute'), /refused \(429\).*unfinished applications/, 'the schedule says why');

  // Once alice's application ends, the next tick runs, as alice.
  t.ok((await api.call('POST', `/api/apps/${held.json.appName}/stop`, undefined, as(alice))).status < 300, 'alice stops it');
  await until(async () => (await api.cluster.get(held.json.appName))?.state !== 'RUNNING', { what: 'the held application to end' });
  await tick(2);
  const runs = await runsOf(api, 'every-minute');
  t.equal(runs.length, 1, 'the next tick ran');
  t.equal(runs[0].submittedBy, alice.id, 'submitted as the schedule\'s owner');
});

t.test('a schedule ticking every second meets its key\'s submissions per minute', async (t) => {
  const { keys, at, api, as } = await setup(t, { submissionsPerMinute: 3, applicationsPerKey: 0 });
  const bob = keys.create('user', 'bob');
  const created = await api.call('POST', '/api/schedules/', { name: 'every-second', schedule: '* * * * * *', jobName: 'etl', concurrencyPolicy: 'Allow', configOverrides: fakeJob() }, as(bob));
  t.equal(created.status, 201, created.body);
  // Ten ticks, one pass each.
  for (let second = 1; second <= 10; second++) await at(second * 1000);
  t.equal((await runsOf(api, 'every-second')).length, 3, 'three runs: the key\'s submissions per minute');
  t.match(await lastOutcome(api, 'every-second'), /refused \(429\).*per minute/);
});

t.test('a revoked owner key\'s schedule submits nothing; an admin\'s is not limited', async (t) => {
  const { keys, tick, api, as } = await setup(t, { applicationsPerKey: 1 });
  const [carol, admin] = [keys.create('user', 'carol'), keys.create('admin', 'ops')];
  const schedule = (name: string) => ({ name, schedule: '* * * * *', jobName: 'etl', configOverrides: longJob() });
  t.equal((await api.call('POST', '/api/schedules/', schedule('carols'), as(carol))).status, 201);
  t.equal((await api.call('POST', '/api/apps/', { jobName: 'ops', configOverrides: longJob() }, as(admin))).status, 201);
  t.equal((await api.call('POST', '/api/schedules/', schedule('admins'), as(admin))).status, 201);
  t.ok(keys.revoke(carol.id), 'carol\'s key revoked');
  await tick(1);
  t.same(await runsOf(api, 'carols'), [], 'no run for a revoked key');
  t.match(await lastOutcome(api, 'carols'), /refused \(401\).*revoked/);
  t.equal((await runsOf(api, 'admins')).length, 1, 'an admin key, as over HTTP, is not held to the cap');
});
