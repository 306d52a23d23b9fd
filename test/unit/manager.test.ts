// The manager (cluster/kubernetes/manager.ts) and its controllers (controller.ts), with a fake
// cache, a fake leader election and a fake clock: nothing runs before the cache is up and the
// Lease is held; the cache's changes reach the keys of the controllers that watch them; losing
// the lead stops every controller at once (calls in flight aborted); a pass asks for another
// after a delay instead of sleeping; a failure comes back after its backoff; a resync heals;
// shutdown waits for passes in flight.
import t from 'tap';
import type { V1Pod } from '@kubernetes/client-node';
import { Controller, type ReconcileContext, type ReconcileResult } from '../../cluster/kubernetes/controller.js';
import { Manager } from '../../cluster/kubernetes/manager.js';
import { FakeElector } from './fixtures/fake-elector.js';
import { installFakeClock } from './fixtures/fake-clock.js';

/** A controller that records its passes; `answer` decides what each pass does. */
function recorder(name: string, keys: string[], options: { resyncMs?: number; now: () => number }) {
  const passes: string[] = [];
  const contexts: ReconcileContext[] = [];
  const state = { answer: async (_key: string, _context: ReconcileContext): Promise<ReconcileResult> => undefined };
  const controller = new Controller({
    name, keys: () => keys, resyncMs: options.resyncMs, workers: 2,
    queue: { now: options.now, baseMs: 1_000, jitter: 0 },
    reconcile: async (key, context) => { passes.push(key); contexts.push(context); return state.answer(key, context); },
  });
  return { controller, passes, contexts, state };
}

function setUp(t: { teardown(run: () => unknown): void }) {
  const clock = installFakeClock();
  const order: string[] = [];
  const cache = { start: async () => { order.push('cache started'); }, stop: async () => { order.push('cache stopped'); } };
  let elector: FakeElector | undefined;
  const manager = new Manager({ cache, elect: (hooks) => (elector = new FakeElector(hooks)) });
  const status = recorder('status', ['app-1', 'app-2'], { now: clock.now });
  const archive = recorder('log-archive', ['driver/app-1'], { now: clock.now, resyncMs: 60_000 });
  manager.register({ controller: status.controller, application: (name) => [name] });
  manager.register({
    controller: archive.controller,
    application: (name) => [`driver/${name}`],
    executorPod: (pod) => [`executor/${pod.metadata!.name!}`],
    onStoppedLeading: () => { order.push('archive stopped leading'); },
    close: async () => { order.push('archive closed'); },
  });
  t.teardown(async () => { await manager.stop(); clock.restore(); });
  return { clock, manager, elector: () => elector!, status, archive, order };
}

t.test('nothing runs before the cache is up and the Lease is held; then every controller passes over its keys', async (t) => {
  const h = setUp(t);
  h.manager.applicationChanged('app-1');
  await h.clock.settle();
  t.same(h.status.passes, [], 'no pass without the lead');
  await h.manager.start();
  t.same(h.order, ['cache started'], 'the cache first');
  t.ok(h.elector().started, 'then the election');
  t.notOk(h.manager.isLeader);
  h.elector().win();
  await h.clock.settle();
  t.same(h.status.passes.sort(), ['app-1', 'app-2'], 'the status controller: each Application once');
  t.same(h.archive.passes, ['driver/app-1'], 'the archive controller: its own keys');
});

t.test('the cache\'s changes reach the keys of the controllers that watch them, collapsed per key', async (t) => {
  const h = setUp(t);
  await h.manager.start();
  h.elector().win();
  await h.clock.settle();
  h.status.passes.length = 0;
  h.archive.passes.length = 0;
  h.manager.applicationChanged('app-3');
  h.manager.applicationChanged('app-3');
  h.manager.applicationChanged('app-3');
  h.manager.executorChanged({ metadata: { name: 'app-3-exec-1' } } as V1Pod);
  await h.clock.settle();
  // The first event's pass starts at once; the two during it collapse into one more pass.
  t.same(h.status.passes, ['app-3', 'app-3'], 'status: the application, twice for three events');
  t.same(h.archive.passes.sort(), ['driver/app-3', 'driver/app-3', 'executor/app-3-exec-1'], 'archive: the driver (likewise) and the executor pod');
});

t.test('losing the lead stops every controller at once: calls in flight are aborted, nothing more runs, until it leads again', async (t) => {
  const h = setUp(t);
  let release: () => void = () => undefined;
  h.status.state.answer = (key) => (key === 'app-1' ? new Promise((ok) => { release = () => ok(undefined); }) : Promise.resolve());
  await h.manager.start();
  h.elector().win();
  await h.clock.settle();
  const inFlight = h.status.contexts[h.status.passes.indexOf('app-1')]!;
  t.ok(inFlight.mayWrite(), 'the pass may write while leading');
  h.elector().lose();
  t.ok(inFlight.signal.aborted, 'its signal is aborted at once');
  t.notOk(inFlight.mayWrite(), 'and it may no longer write');
  t.ok(h.order.includes('archive stopped leading'), 'each controller\'s hook ran');
  t.equal(h.status.controller.queue, undefined, 'no queue without the lead');
  h.status.passes.length = 0;
  h.manager.applicationChanged('app-1');
  await h.clock.advance(120_000, 10_000);
  t.same(h.status.passes, [], 'no pass after the lead is lost');
  h.status.state.answer = async () => undefined;
  h.elector().win();
  await h.clock.settle();
  t.same(h.status.passes, [], 'a new term waits for the last term\'s pass to end');
  release();
  await h.clock.settle();
  t.same(h.status.passes.sort(), ['app-1', 'app-2'], 'then starts afresh with every key');
});

t.test('a controller registered while leading starts at once; two controllers may not share a name', async (t) => {
  const h = setUp(t);
  await h.manager.start();
  h.elector().win();
  const schedules = recorder('schedules', ['nightly'], { now: h.clock.now });
  h.manager.register({ controller: schedules.controller, application: () => [] });
  await h.clock.settle();
  t.same(schedules.passes, ['nightly']);
  t.throws(() => h.manager.register({ controller: recorder('status', [], { now: h.clock.now }).controller }), /a controller named status is registered already/);
  t.same(h.manager.controllers.map((c) => c.name), ['status', 'log-archive', 'schedules']);
});

t.test('a pass asks for another after a delay instead of sleeping; a failure comes back after its backoff', async (t) => {
  const h = setUp(t);
  let failures = 1;
  h.status.state.answer = async (key) => {
    if (key === 'app-1') return { requeueAfterMs: 30_000 };
    if (failures-- > 0) throw new Error('apiserver unavailable');
  };
  await h.manager.start();
  h.elector().win();
  await h.clock.settle();
  t.same(h.status.passes.sort(), ['app-1', 'app-2']);
  await h.clock.advance(900);
  t.equal(h.status.passes.filter((k) => k === 'app-2').length, 1, 'no retry before the 1 s backoff');
  await h.clock.advance(200);
  t.equal(h.status.passes.filter((k) => k === 'app-2').length, 2, 'retried after its backoff');
  t.equal(h.status.controller.queue?.retries('app-2'), 0, 'and forgotten after the success');
  await h.clock.advance(28_000, 1_000);
  t.equal(h.status.passes.filter((k) => k === 'app-1').length, 1, 'app-1 not before its 30 s');
  await h.clock.advance(1_000);
  t.equal(h.status.passes.filter((k) => k === 'app-1').length, 2, 'app-1 again after 30 s');
});

t.test('a resync queues every key again, so a missed event heals', async (t) => {
  const h = setUp(t);
  await h.manager.start();
  h.elector().win();
  await h.clock.settle();
  t.equal(h.archive.passes.length, 1);
  await h.clock.advance(59_000, 1_000);
  t.equal(h.archive.passes.length, 1, 'not before the resync period');
  await h.clock.advance(1_000);
  t.equal(h.archive.passes.length, 2, 'again at 60 s');
  await h.clock.advance(60_000, 1_000);
  t.equal(h.archive.passes.length, 3, 'and every 60 s');
});

t.test('stop releases the Lease, waits for passes in flight, closes the controllers, then the cache', async (t) => {
  const h = setUp(t);
  let release: () => void = () => undefined;
  h.archive.state.answer = () => new Promise((ok) => { release = () => ok(undefined); });
  await h.manager.start();
  h.elector().win();
  await h.clock.settle();
  let stopped = false;
  const stopping = h.manager.stop().then(() => { stopped = true; });
  await h.clock.settle();
  t.ok(h.elector().stopped, 'the Lease is released');
  t.ok(h.archive.contexts[0]!.signal.aborted, 'the pass in flight is told');
  t.notOk(stopped, 'stop waits for it');
  release();
  await stopping;
  t.same(h.order.slice(-2), ['archive closed', 'cache stopped'], 'controllers closed, then the cache');
});
