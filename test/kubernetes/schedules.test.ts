// Schedules in Kubernetes mode on the test bed (apiserver, our webhook; no kubelet: runs stay
// PENDING, which is all a tick needs). A Schedule resource is read by the loop of one replica,
// which makes the tick's run; after a leader change another replica (its own clients, cache
// and store), even one that never saw the first one's status write, makes no second run of
// that tick (the name from the tick meets the first run: 409), and makes the next tick's.
import t from 'tap';
import { KubernetesScheduleStore } from '../../cluster/kubernetes/schedule-store.js';
import { ScheduleReconciler } from '../../cluster/kubernetes/schedule-reconciler.js';
import { emptyStatus } from '../../cluster/schedules/schedule-store.js';
import { nextTick } from '../../domain/index.js';
import { SchedulerTestClock } from '../helpers/scheduler-clock.js';
import { ScheduleRunner } from '../../cluster/schedules/runner.js';
import { eventually, startApi, startKubeBed } from '../helpers/kubernetes.js';

t.test('one run per tick across a leader change', async (t) => {
  const bed = await startKubeBed(t);
  const other = await startApi(bed.testbed.kubeconfig, bed.namespace, { rules: bed.rules, controller: false });
  t.teardown(() => other.close());
  const storeA = new KubernetesScheduleStore(bed.api.kubeClients, bed.namespace);
  const storeB = new KubernetesScheduleStore(other.kubeClients, bed.namespace);
  const created = await storeA.create({
    spec: { name: 'every-minute', schedule: '* * * * *', jobName: 'sched', configOverrides: { type: 'Python', mainApplicationFile: 'local:///fake/job.py' } },
    createdBy: 'key-a', createdAt: new Date().toISOString(), status: emptyStatus(),
  });
  t.equal(created.createdBy, 'key-a');
  t.match((await storeB.get('every-minute'))?.spec, { schedule: '* * * * *', jobName: 'sched' }, 'a Schedule resource, read by another replica');
  const runs = async () => (await bed.applications()).filter((a) => a.metadata.name.startsWith('sched-')).map((a) => a.metadata.name).sort();

  const clock = new SchedulerTestClock(Date.parse(created.createdAt));
  const tick1 = nextTick({ schedule: '* * * * *' }, clock.now())!;
  let aLeads = true;
  const leaderA = new ScheduleReconciler({ store: storeA, cluster: bed.api.cluster, mayWrite: () => aLeads, clock, queue: clock.queueOptions() });
  leaderA.controller.activate(); // as the manager does when this replica wins the Lease
  t.teardown(() => leaderA.controller.deactivate());
  await clock.until(tick1.getTime() + 1000, leaderA);
  t.equal((await runs()).length, 1, 'the leader made the first tick\'s run');
  t.match((await storeA.get('every-minute'))?.status, { lastScheduleTime: tick1.toISOString() }, 'and recorded it in the status');
  // The leader loses the Lease; its successor never saw that status write (as if it was lost).
  aLeads = false;
  leaderA.controller.deactivate();
  await storeB.setStatus('every-minute', emptyStatus());
  const leaderB = new ScheduleRunner({ store: storeB, cluster: other.cluster, clock });
  leaderB.start();
  t.teardown(() => leaderB.stop());
  await clock.until(tick1.getTime() + 2000, leaderB);
  await eventually(async () => (await storeB.get('every-minute'))?.status.lastOutcome, (o) => /made before/.test(o ?? ''), { what: 'the new leader to settle the tick' });
  t.equal((await runs()).length, 1, 'no second run of the same tick');
  await clock.until(tick1.getTime() + 61_000, leaderB);
  t.equal((await runs()).length, 2, 'the next tick: one more run, by the new leader');
  t.same((await runs()).map((name) => name.slice(0, 22)), [tick1, new Date(tick1.getTime() + 60_000)].map((d) => `sched-${d.toISOString().slice(0, 10).replaceAll('-', '')}-${d.toISOString().slice(11, 19).replaceAll(':', '')}-`), 'named after their ticks');
});
