// The Schedule controller (cluster/kubernetes/schedule-reconciler.ts) as a controller of the
// manager, with a fake store, a fake leader election and a fake clock: it passes over the
// Schedules only while this replica leads, again every resync (changes through other
// replicas) and at once when told of a change here; a pass that fails (the store unreadable)
// comes back after its backoff; losing the Lease stops it.
import t from 'tap';
import type { Cluster } from '../../cluster/cluster.js';
import { Manager } from '../../cluster/kubernetes/manager.js';
import { FakeElector } from './fixtures/fake-elector.js';
import { ScheduleReconciler } from '../../cluster/kubernetes/schedule-reconciler.js';
import type { ScheduleStore } from '../../cluster/schedules/schedule-store.js';
import { expectAfter, fakeClockAndQueue } from './fixtures/fake-clock.js';

function setUp(t: { teardown(run: () => unknown): void }) {
  let manager: Manager | undefined;
  const { clock, queue } = fakeClockAndQueue(t, () => manager?.stop());
  const state = { passes: 0, failing: 0 };
  const store = {
    list: async () => {
      state.passes++;
      if (state.failing > 0) { state.failing--; throw new Error('apiserver unreachable'); }
      return [];
    },
  } as unknown as ScheduleStore;
  const logged: string[] = [];
  let elector: FakeElector | undefined;
  manager = new Manager({ cache: { start: async () => undefined, stop: async () => undefined }, elect: (hooks) => (elector = new FakeElector(hooks)) });
  const schedules = new ScheduleReconciler({
    store, cluster: {} as Cluster, mayWrite: () => manager!.isLeader, resyncMs: 10_000,
    log: (_level, message) => logged.push(message), queue,
  });
  manager.register(schedules.registration);
  return { clock, manager, schedules, state, logged, elector: () => elector! };
}

t.test('passes only while leading: at once, every resync, and when a change here wakes it', async (t) => {
  const h = setUp(t);
  await h.manager.start();
  h.schedules.wake();
  await h.clock.advance(20_000, 1_000);
  t.equal(h.state.passes, 0, 'not leading: no pass, whatever the time or a wake');
  h.elector().win();
  await h.clock.settle();
  t.equal(h.state.passes, 1, 'leading: a pass at once');
  await expectAfter(t, h.clock, () => h.state.passes, [[9_900, 1, 'nothing before the resync'], [100, 2, 'a pass at the resync']]);
  h.schedules.wake();
  await h.clock.settle();
  t.equal(h.state.passes, 3, 'a change through this replica: a pass at once');
  h.elector().lose();
  await h.clock.advance(30_000, 1_000);
  t.equal(h.state.passes, 3, 'the Lease lost: no more passes');
});

t.test('a pass that fails comes back after its backoff, not at the next resync', async (t) => {
  const h = setUp(t);
  h.state.failing = 2;
  await h.manager.start();
  h.elector().win();
  await h.clock.settle();
  t.equal(h.state.passes, 1);
  t.match(h.logged.join('\n'), /scheduler pass failed \(again in 1000 ms\): apiserver unreachable/);
  await expectAfter(t, h.clock, () => h.state.passes, [
    [1_000, 2, 'again after 1 s'],
    [1_900, 2, 'the second failure waits 2 s'],
    [100, 3, 'and then succeeds'],
    [9_900, 3, 'back on the resync cadence'],
    [100, 4, 'a pass at the resync'],
  ]);
});
