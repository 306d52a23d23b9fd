// The pure schedule decisions (domain/schedule.ts) at fixed dates, a DST change included.
import t from 'tap';
import {
  decideTick, isRunOfTick, latestTick, nextTick, runsBeyondHistory, scheduledRunName, scheduleProblem, tickLabelValue,
} from '../../domain/schedule.js';

const at = (iso: string) => new Date(iso);
const isos = (dates: (Date | null)[]) => dates.map((d) => d?.toISOString() ?? null);

t.test('next ticks follow the time zone across both DST changes (Europe/Berlin, 2026)', async (t) => {
  const daily = { schedule: '30 2 * * *', timeZone: 'Europe/Berlin' };
  // 29 March: 02:00 CET jumps to 03:00 CEST, so 02:30 does not exist: that day's run is at the first valid time.
  const spring = [nextTick(daily, at('2026-03-28T00:00:00Z'))];
  spring.push(nextTick(daily, spring[0]!), nextTick(daily, at('2026-03-29T01:00:00Z')));
  t.same(isos(spring), ['2026-03-28T01:30:00.000Z', '2026-03-29T01:00:00.000Z', '2026-03-30T00:30:00.000Z'], '02:30 CET, then 03:00 CEST (the gap), then 02:30 CEST');
  // 25 October: 03:00 CEST goes back to 02:00 CET, so 02:30 happens twice: one run.
  const autumn = [nextTick(daily, at('2026-10-24T12:00:00Z'))];
  autumn.push(nextTick(daily, autumn[0]!));
  t.same(isos(autumn), ['2026-10-25T00:30:00.000Z', '2026-10-26T01:30:00.000Z'], 'the repeated 02:30 runs once; the next day is an hour later in UTC');
  const hourly = { schedule: '0 * * * *', timeZone: 'Europe/Berlin' };
  t.same(isos([nextTick(hourly, at('2026-10-25T00:00:00Z')), nextTick(hourly, at('2026-10-25T01:00:00Z'))]),
    ['2026-10-25T01:00:00.000Z', '2026-10-25T02:00:00.000Z'], 'an hourly schedule keeps one tick per real hour through the repeated hour');
  t.same(isos([latestTick(daily, at('2026-03-29T01:00:00Z'))]), ['2026-03-29T01:00:00.000Z'], 'a tick at exactly now is the latest');
});

t.test('seconds-level (6-field) schedules and UTC by default', async (t) => {
  t.same(isos([nextTick({ schedule: '*/10 * * * * *' }, at('2026-11-27T23:00:05Z'))]), ['2026-11-27T23:00:10.000Z']);
  t.same(isos([nextTick({ schedule: '0 9 * * 1' }, at('2026-11-27T23:00:00Z'))]), ['2026-11-30T09:00:00.000Z'], 'Monday 09:00 UTC');
});

t.test('bad crons and time zones are named with the field', async (t) => {
  t.equal(scheduleProblem({ schedule: '*/5 * * * *', timeZone: 'America/New_York' }), undefined);
  t.match(scheduleProblem({ schedule: 'every day' }), { field: 'schedule', message: /^field "schedule": .*5 fields/ });
  t.match(scheduleProblem({ schedule: '* * * * * * *' }), { field: 'schedule' }, '7 fields are refused');
  t.match(scheduleProblem({ schedule: '61 * * * *' }), { field: 'schedule' });
  t.match(scheduleProblem({ schedule: '0 0 31 2 *' }), { field: 'schedule', message: /never falls due/ });
  t.match(scheduleProblem({ schedule: '* * * * *', timeZone: 'Mars/Olympus' }), { field: 'timeZone', message: /IANA/ });
});

t.test('the latest due tick runs; older missed ones are counted, not run', async (t) => {
  const timing = { schedule: '*/5 * * * *' };
  t.match(decideTick({ timing, since: at('2026-11-27T10:00:00Z'), now: at('2026-11-27T10:04:59Z'), activeRuns: [] }),
    { action: 'wait', next: at('2026-11-27T10:05:00Z') }, 'nothing due before the first tick');
  t.match(decideTick({ timing, since: at('2026-11-27T10:00:00Z'), now: at('2026-11-27T10:05:00Z'), activeRuns: [] }),
    { action: 'run', tick: at('2026-11-27T10:05:00Z'), missed: 0, stop: [], next: at('2026-11-27T10:10:00Z') });
  t.match(decideTick({ timing, since: at('2026-11-27T10:05:00Z'), now: at('2026-11-27T10:05:30Z'), activeRuns: [] }),
    { action: 'wait' }, 'a tick already acted upon is not due again');
  // Down from 10:07 to 10:31: 10:10 … 10:30 were due; only 10:30 runs.
  t.match(decideTick({ timing, since: at('2026-11-27T10:05:00Z'), now: at('2026-11-27T10:31:00Z'), activeRuns: [] }),
    { action: 'run', tick: at('2026-11-27T10:30:00Z'), missed: 4 });
});

t.test('startingDeadlineSeconds: a tick found too late is missed', async (t) => {
  const timing = { schedule: '0 * * * *', startingDeadlineSeconds: 120 };
  t.match(decideTick({ timing, since: at('2026-11-27T07:00:00Z'), now: at('2026-11-27T09:02:00Z'), activeRuns: [] }),
    { action: 'run', tick: at('2026-11-27T09:00:00Z'), missed: 1 }, 'within the deadline (120 s late exactly)');
  t.match(decideTick({ timing, since: at('2026-11-27T07:00:00Z'), now: at('2026-11-27T09:02:01Z'), activeRuns: [] }),
    { action: 'skip', reason: 'deadline', tick: at('2026-11-27T09:00:00Z'), next: at('2026-11-27T10:00:00Z') });
});

t.test('concurrency policies and suspend', async (t) => {
  const input = { since: at('2026-11-27T10:00:00Z'), now: at('2026-11-27T10:01:00Z'), activeRuns: ['job-a', 'job-b'] };
  t.match(decideTick({ ...input, timing: { schedule: '* * * * *' } }), { action: 'run', stop: [] }, 'Allow (the default) runs beside active runs');
  t.match(decideTick({ ...input, timing: { schedule: '* * * * *', concurrencyPolicy: 'Forbid' } }), { action: 'skip', reason: 'forbid', tick: at('2026-11-27T10:01:00Z') });
  t.match(decideTick({ ...input, activeRuns: [], timing: { schedule: '* * * * *', concurrencyPolicy: 'Forbid' } }), { action: 'run' }, 'Forbid runs once nothing is active');
  t.match(decideTick({ ...input, timing: { schedule: '* * * * *', concurrencyPolicy: 'Replace' } }), { action: 'run', stop: ['job-a', 'job-b'] });
  t.match(decideTick({ ...input, timing: { schedule: '* * * * *', suspend: true } }), { action: 'wait', next: at('2026-11-27T10:02:00Z') }, 'suspended: nothing');
});

t.test('a run name is the appName shape, the same for the same tick and schedule', async (t) => {
  const tick = at('2026-11-27T23:05:00Z');
  const name = scheduledRunName('nightly-etl', 'nightly', tick);
  t.match(name, /^nightly-etl-20261127-230500-[a-z0-9]{10}$/);
  t.equal(scheduledRunName('nightly-etl', 'nightly', new Date(tick)), name, 'deterministic');
  t.not(scheduledRunName('nightly-etl', 'nightly-2', tick), name, 'another schedule of the same job has another name');
  t.not(scheduledRunName('nightly-etl', 'nightly', at('2026-11-27T23:06:00Z')), name, 'another tick has another name');
  t.ok(scheduledRunName('a'.repeat(41), 'x'.repeat(63), tick).length <= 63, 'fits a pod name');
  t.match(scheduledRunName('a'.repeat(41), 'x'.repeat(63), tick, 'k'), /^a{36}-20261127-230500-[a-z0-9]{10}$/, 'a long job name is cut, the digest kept whole');
  t.equal(tickLabelValue(tick), '20261127T230500Z');
});

t.test('a run name: 10 digest characters from the owner key and the schedule; the next names differ', async (t) => {
  const tick = at('2026-11-27T23:05:00Z');
  const name = scheduledRunName('etl', 'nightly', tick, 'key-a');
  t.match(name, /^etl-20261127-230500-[a-z0-9]{10}$/, 'at least 10 base36 characters: no schedule name is found by brute force that names another\'s runs');
  t.equal(scheduledRunName('etl', 'nightly', new Date(tick), 'key-a'), name, 'deterministic: every replica tries the same name');
  t.not(scheduledRunName('etl', 'nightly', tick, 'key-b'), name, 'another key\'s schedule of the same name has other names');
  const names = [0, 1, 2, 3].map((candidate) => scheduledRunName('etl', 'nightly', tick, 'key-a', candidate));
  t.equal(names[0], name, 'candidate 0 is the name');
  t.equal(new Set(names).size, 4, 'each next name differs');
  t.same([0, 1, 2, 3].map((candidate) => scheduledRunName('etl', 'nightly', tick, 'key-a', candidate)), names, 'and is the same on every call');
});

t.test('a run of a tick is proven by its scheduler-only labels and its owner, not by its name', async (t) => {
  const tick = at('2026-11-27T23:05:00Z');
  const labels = { 'schedule.submission-service.io/name': 'nightly', 'schedule.submission-service.io/tick': '20261127T230500Z' };
  t.ok(isRunOfTick({ labels, submittedBy: 'key-a' }, { name: 'nightly', owner: 'key-a' }, tick));
  t.notOk(isRunOfTick({ labels, submittedBy: 'key-b' }, { name: 'nightly', owner: 'key-a' }, tick), 'another key\'s application with the same labels');
  t.notOk(isRunOfTick({ labels: { ...labels, 'schedule.submission-service.io/name': 'other' }, submittedBy: 'key-a' }, { name: 'nightly', owner: 'key-a' }, tick), 'another schedule of the owner');
  t.notOk(isRunOfTick({ labels, submittedBy: 'key-a' }, { name: 'nightly', owner: 'key-a' }, at('2026-11-27T23:06:00Z')), 'another tick');
  t.notOk(isRunOfTick({ labels: {}, submittedBy: 'key-a' }, { name: 'nightly', owner: 'key-a' }, tick), 'no labels');
  t.ok(isRunOfTick({ labels, submittedBy: null }, { name: 'nightly', owner: null }, tick), 'without authentication: no owner on either');
});

t.test('history: the newest successful and failed runs are kept, running ones never go', async (t) => {
  const runs = [
    { appName: 'r1', state: 'COMPLETED', createdAt: '2026-11-27T10:01:00Z' },
    { appName: 'r2', state: 'FAILED', createdAt: '2026-11-27T10:02:00Z' },
    { appName: 'r3', state: 'COMPLETED', createdAt: '2026-11-27T10:03:00Z' },
    { appName: 'r4', state: 'KILLED', createdAt: '2026-11-27T10:04:00Z' },
    { appName: 'r5', state: 'RUNNING', createdAt: '2026-11-27T10:05:00Z' },
    { appName: 'r6', state: 'COMPLETED', createdAt: '2026-11-27T10:06:00Z' },
  ];
  t.same(runsBeyondHistory(runs, { successful: 2, failed: 1 }).sort(), ['r1', 'r2']);
  t.same(runsBeyondHistory(runs, { successful: 0, failed: 0 }).sort(), ['r1', 'r2', 'r3', 'r4', 'r6']);
});
