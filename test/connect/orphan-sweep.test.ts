// The orphan sweep (connect/orphan-sweep.ts) on a clock the test moves: a Connect session's
// application no endpoint here holds is stopped once its last activity (the shared label, else
// its start) is older than the idle time plus the shared activity's lateness, once; held here,
// in use elsewhere or ended, it is left alone. A warm pool's server is swept by the same rule:
// its pool writes its activity while its replica lives (ActivityBook.keep), so it is kept then,
// and stopped once that replica is gone (killed without a drain).
import type { FastifyBaseLogger } from 'fastify';
import { pino } from 'pino';
import t, { type Test } from 'tap';
import { lastActivityOf, OrphanSweep, orphanWarmWhy, orphanWhy } from '../../connect/orphan-sweep.js';
import { CONNECT_SESSION_LABEL, WARM_SESSION } from '../../connect/server-app.js';
import type { ConnectApp } from '../../connect/service-api.js';
import { ActivityBook, CONNECT_ACTIVITY_LABEL, markEvery, orphanAfter } from '../../connect/shared-activity.js';
import { FakeClock } from '../gateway/fake-clock.js';

const log = pino({ enabled: false }) as unknown as FastifyBaseLogger;
const IDLE = 60_000;

/** Lets the sweep the clock started run to its end (its reads and stops answer at once here). */
const settled = async () => { for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve)); };

function fixture(t: Test, apps: ConnectApp[], held = new Set<string>()) {
  const clock = new FakeClock(Date.parse('2026-11-29T04:00:00Z'));
  const stops: Array<{ appName: string; why: string }> = [];
  let failing = false;
  const sweep = new OrphanSweep({
    servers: () => Promise.resolve(apps), holds: (appName) => held.has(appName), idleMs: IDLE, log, clock,
    stop: (appName, why) => {
      if (failing) return Promise.reject(new Error('the apiserver is away'));
      stops.push({ appName, why });
      return Promise.resolve();
    },
  });
  t.teardown(() => sweep.close());
  /** Moves the clock by `ms` (each sweep due on the way starts) and lets the sweeps end. */
  const advance = async (ms: number) => { clock.advance(ms); await settled(); };
  return { clock, sweep, stops, advance, fail: (on: boolean) => { failing = on; } };
}

const app = (appName: string, at: number, extra: Partial<ConnectApp> = {}): ConnectApp => ({
  appName, state: 'RUNNING', createdAt: new Date(at - 5_000).toISOString(), startedAt: new Date(at).toISOString(),
  ...extra, labels: { [CONNECT_SESSION_LABEL]: `session-${appName}`, ...extra.labels },
});

const NOW = Date.parse('2026-11-29T04:00:00Z');

t.test('an orphan not idle long enough is kept; past the idle time (and the activity\'s lateness) it is stopped once, with why', async (t) => {
  const apps = [app('connect-a', NOW, { labels: { [CONNECT_ACTIVITY_LABEL]: String(NOW) } })];
  const { sweep, stops, advance } = fixture(t, apps);
  sweep.open();
  await settled();
  t.same(stops, [], 'found at start, fresh: kept');
  await advance(IDLE);
  t.same(stops, [], 'idle for the idle time only: kept (a live holder may still write its activity late)');
  await advance(orphanAfter(IDLE) - IDLE + markEvery(IDLE));
  t.same(stops.map((s) => s.appName), ['connect-a'], 'idle past the idle time plus the lateness: stopped by a sweep on the clock');
  t.equal(stops[0]?.why, orphanWhy(IDLE));
  t.match(stops[0]?.why, /orphaned Spark Connect session: no live endpoint held it and it was idle for more than 60 s/);
  await advance(4 * markEvery(IDLE));
  t.equal(stops.length, 1, 'still listed running (the stop not seen yet): not stopped again');
  apps[0]!.state = 'KILLED';
  await advance(markEvery(IDLE));
  t.equal(stops.length, 1, 'ended: left');
});

t.test('held by this endpoint: its own idle culling decides, the sweep never stops it', async (t) => {
  const { sweep, stops, advance } = fixture(t, [app('connect-held', NOW - 10 * IDLE)], new Set(['connect-held']));
  sweep.open();
  await advance(3 * IDLE);
  t.same(stops, []);
});

t.test('in use through another replica (its activity label keeps moving): kept; once that stops, stopped after the idle time', async (t) => {
  const apps = [app('connect-elsewhere', NOW - 10 * IDLE, { labels: { [CONNECT_ACTIVITY_LABEL]: String(NOW) } })];
  const { clock, sweep, stops, advance } = fixture(t, apps);
  sweep.open();
  for (let i = 0; i < 12; i++) {
    // The holder writes at most every markEvery while its client calls (connect/shared-activity.ts).
    apps[0]!.labels![CONNECT_ACTIVITY_LABEL] = String(clock.now());
    await advance(markEvery(IDLE));
  }
  t.same(stops, [], 'three idle times later, still in use elsewhere: kept (its start is long past, the label counts)');
  const last = clock.now();
  apps[0]!.labels![CONNECT_ACTIVITY_LABEL] = String(last);
  await advance(orphanAfter(IDLE) - markEvery(IDLE));
  t.same(stops, [], 'not yet idle long enough');
  await advance(2 * markEvery(IDLE));
  t.same(stops.map((s) => s.appName), ['connect-elsewhere'], 'its holder went quiet (or away): stopped');
});

t.test('ended applications are left; local mode\'s records (no label) count from the start', async (t) => {
  const old = NOW - 10 * IDLE;
  const apps = [
    app('connect-killed', old, { state: 'KILLED' }), app('connect-done', old, { state: 'COMPLETED' }),
    app('connect-queued', 0, { state: 'PENDING', startedAt: null, createdAt: new Date(old).toISOString() }),
    app('connect-fresh', NOW - 1000),
  ];
  const { sweep, stops } = fixture(t, apps);
  t.equal(lastActivityOf(apps[2]!), old, 'a queued one (no start yet): its creation');
  await sweep.sweep();
  t.same(stops.map((s) => s.appName), ['connect-queued'], 'only the lost queued one is stopped');
});

t.test('warm pool servers: this endpoint\'s pool\'s and a live pool\'s (fresh activity) kept; a dead replica\'s (stale or none) stopped, saying so', async (t) => {
  const old = NOW - 10 * IDLE;
  const warm = (appName: string, at: number, activity?: number, extra: Partial<ConnectApp> = {}) =>
    app(appName, at, { ...extra, labels: { [CONNECT_SESSION_LABEL]: WARM_SESSION, ...(activity ? { [CONNECT_ACTIVITY_LABEL]: String(activity) } : {}) } });
  const apps = [
    warm('warm-own', old), warm('warm-live', old, NOW - markEvery(IDLE)),
    warm('warm-dead', old, NOW - orphanAfter(IDLE) - 1), warm('warm-unwritten', old),
    warm('warm-dead-queued', 0, undefined, { state: 'PENDING', startedAt: null, createdAt: new Date(old).toISOString() }),
  ];
  const { sweep, stops } = fixture(t, apps, new Set(['warm-own']));
  await sweep.sweep();
  t.same(stops.map((s) => s.appName).sort(), ['warm-dead', 'warm-dead-queued', 'warm-unwritten'], 'only the servers no live pool writes');
  t.equal(stops[0]?.why, orphanWarmWhy(IDLE));
  t.match(stops[0]?.why, /orphaned Spark Connect warm pool server: no live endpoint kept it and its pool had not written its activity for more than 60 s/);
});

t.test('a replica\'s pool writes its servers\' activity while it lives (every quarter of the idle time): kept by every sweep; killed, its servers are stopped once', async (t) => {
  const apps = [app('warm-a', NOW, { labels: { [CONNECT_SESSION_LABEL]: WARM_SESSION } })];
  const { clock, sweep, stops, advance } = fixture(t, apps);
  const marks: Array<{ appName: string; at: number }> = [];
  // The pool's replica writes the label as Kubernetes mode wires it (cli/connect-kubernetes.ts), here straight onto the listed app.
  const book = new ActivityBook({
    mark: async (appName, at) => { marks.push({ appName, at }); apps.find((a) => a.appName === appName)!.labels![CONNECT_ACTIVITY_LABEL] = String(at); },
    read: async () => undefined,
  }, IDLE, log);
  const tick = Math.min(60_000, IDLE / 4); // the pool's replica's cull tick (connect/sessions.ts)
  sweep.open();
  for (let i = 0; i < 24; i++) {
    book.keep(['warm-a'], clock.now());
    await advance(tick);
  }
  t.same(stops, [], 'six idle times later, its pool still alive: kept (its start is long past, the label counts)');
  t.ok(marks.length >= 6 && marks.length <= 24, `written at most once a quarter of the idle time (${marks.length} writes in 6 idle times)`);
  book.keep(['warm-a'], clock.now()); // its last tick
  t.equal(marks.at(-1)?.at, clock.now(), 'written at its last tick');
  book.keep([], clock.now());
  const written = marks.length;
  book.keep(['warm-b'], clock.now());
  t.same(marks.slice(written).map((m) => m.appName), ['warm-b'], 'a server that left the pool is not written any more; a new one at once');
  // Its replica is killed: nothing writes warm-a's activity any more.
  await advance(orphanAfter(IDLE) - markEvery(IDLE));
  t.same(stops, [], 'not yet: its last write may be late');
  await advance(2 * markEvery(IDLE));
  t.same(stops, [{ appName: 'warm-a', why: orphanWarmWhy(IDLE) }], 'stopped, once, saying why');
  await advance(4 * markEvery(IDLE));
  t.equal(stops.length, 1, 'not stopped again while its stop is carried out');
});

t.test('a warm pool server\'s failed activity write is tried again at the next tick', async (t) => {
  let failing = true;
  const marks: number[] = [];
  const book = new ActivityBook({
    mark: async (_appName, at) => { if (failing) throw new Error('the apiserver is away'); marks.push(at); },
    read: async () => undefined,
  }, IDLE, log);
  book.keep(['warm-c'], NOW);
  await settled();
  failing = false;
  book.keep(['warm-c'], NOW + 1000);
  await settled();
  t.same(marks, [NOW + 1000], 'written at the next tick, not a quarter of the idle time later');
  book.keep(['warm-c'], NOW + 2000);
  t.same(marks, [NOW + 1000], 'then not before a quarter of the idle time');
});

t.test('a stop that fails is tried again at the next sweep', async (t) => {
  const { sweep, stops, advance, fail } = fixture(t, [app('connect-b', NOW - 10 * IDLE)]);
  fail(true);
  sweep.open();
  await settled();
  t.same(stops, [], 'the stop failed');
  fail(false);
  await advance(markEvery(IDLE));
  t.same(stops.map((s) => s.appName), ['connect-b'], 'stopped at the next sweep');
});
