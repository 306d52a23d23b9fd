// Faults between a replica and the real apiserver (a TCP proxy in front of the test bed:
// test/helpers/stall-proxy.ts), for the controller's leader election and its informers:
// - the leader's renewals hang (the proxy stops forwarding, connections stay open): it stops
//   leading within its renew deadline, BEFORE the other replica takes the Lease over, and the
//   other replica then writes the status;
// - a watch answered 410 Gone (its resourceVersion is older than the restarted apiserver's
//   watch cache): the informer lists again, and what changed meanwhile (a deletion) is seen.
import { join } from 'node:path';
import t from 'tap';
import { register } from 'prom-client';
import { timingForLease } from '../../cluster/kubernetes/lease-decision.js';
import { APPLICATIONS, GROUP, VERSION } from '../../cluster/kubernetes/client.js';
import { eventually, fakeKubelet, startApi, startKubeBed } from '../helpers/kubernetes.js';
import { startStallProxy } from '../helpers/stall-proxy.js';

// Renew deadline 4 s, retry 0.8 s: client-go's proportions (15, 10, 2 s) at 6 s, so that a
// start of another replica in this process (seconds of schema compilation on a loaded
// machine) does not cost the leader its Lease before the fault is even put in.
const timing = timingForLease(6_000);

async function counter(name: string, labels: string): Promise<number> {
  if (!register.getSingleMetric(name)) return 0;
  const text = await register.getSingleMetricAsString(name);
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

t.test('a leader whose renewals hang stops leading before another replica takes over', async (t) => {
  const bed = await startKubeBed(t);
  await bed.api.cluster.close(); // out of the election: the two replicas below run for the Lease
  const proxy = await startStallProxy(new URL(bed.testbed.server));
  t.teardown(() => proxy.close());
  const behind = proxy.kubeconfig(bed.testbed.kubeconfig, join(bed.dir, 'proxied-kubeconfig'));
  const first = await startApi(behind, bed.namespace, { lease: { ...timing, identity: 'first' } });
  t.teardown(() => first.close());
  await eventually(async () => first.cluster.leader!.isLeader, Boolean, { what: 'the first replica to lead' });
  const second = await startApi(bed.testbed.kubeconfig, bed.namespace, { lease: { ...timing, identity: 'second' } });
  t.teardown(() => second.close());
  t.notOk(second.cluster.leader!.isLeader, 'the second replica follows');

  const submitted = await second.app.inject({ method: 'POST', url: '/api/apps/', payload: { jobName: 'hung' } });
  t.equal(submitted.statusCode, 201);
  const appName = submitted.json().appName as string;

  await eventually(async () => first.cluster.leader!.isLeader && !second.cluster.leader!.isLeader, Boolean, { what: 'the first replica to lead when the fault begins' });
  // Sampled on one event loop: when the first stopped leading, when the second started.
  let firstStopped: number | undefined;
  let secondStarted: number | undefined;
  let bothAtOnce = 0;
  const sampler = setInterval(() => {
    const now = performance.now();
    const a = first.cluster.leader!.isLeader;
    const b = second.cluster.leader!.isLeader;
    if (a && b) bothAtOnce++;
    if (!a) firstStopped ??= now;
    if (b) secondStarted ??= now;
  }, 5);
  t.teardown(() => clearInterval(sampler));
  const stalledAt = performance.now();
  proxy.stall();
  await eventually(async () => secondStarted !== undefined, Boolean, { what: 'the second replica to take over', timeoutMs: 30_000 });
  clearInterval(sampler);
  t.ok(firstStopped !== undefined && firstStopped > stalledAt, 'the first led until the fault');
  t.ok(firstStopped !== undefined && firstStopped < secondStarted!, 'the hung leader stopped leading before the other started');
  t.equal(bothAtOnce, 0, 'never two leaders at once');
  t.equal(first.cluster.reconciler.queue, undefined, 'and its controller stopped (no queue, no writes)');
  t.comment(`stopped ${Math.round(firstStopped! - stalledAt)} ms after the stall (renew deadline ${timing.renewDeadlineMs} ms), taken over after ${Math.round(secondStarted! - stalledAt)} ms (lease ${timing.leaseMs} ms)`);
  t.ok(await counter('submission_service_lease_attempts_total', 'outcome="timeout"') >= 1, 'the hung renewal timed out (counted)');

  await fakeKubelet(bed.clients, bed.namespace, appName, 'Running');
  const written = await eventually(async () => (await bed.applications()).find((a) => a.metadata.name === appName), (a) => a?.status?.state === 'RUNNING', { what: 'the new leader to write RUNNING' });
  t.equal(written?.status.state, 'RUNNING', 'the new leader writes');

  const heldBefore = await counter('submission_service_lease_attempts_total', 'outcome="held-by-other"');
  proxy.resume();
  await eventually(() => counter('submission_service_lease_attempts_total', 'outcome="held-by-other"'), (n) => n > heldBefore + 1, { what: 'the first replica to read the Lease again' });
  t.notOk(first.cluster.leader!.isLeader, 'reconnected, the first replica follows');
  t.ok(second.cluster.leader!.isLeader, 'the second still leads');
});

t.test('a watch answered 410 Gone lists again and sees what it missed', async (t) => {
  const bed = await startKubeBed(t);
  const proxy = await startStallProxy(new URL(bed.testbed.server));
  t.teardown(() => proxy.close());
  const behind = proxy.kubeconfig(bed.testbed.kubeconfig, join(bed.dir, 'proxied-kubeconfig'));
  const replica = await startApi(behind, bed.namespace, { controller: false });
  t.teardown(() => replica.close());
  const where = { group: GROUP, version: VERSION, namespace: bed.namespace, plural: APPLICATIONS };
  const application = (name: string) => ({
    apiVersion: 'submission-service.io/v1', kind: 'Application',
    metadata: { name, labels: { 'submission-service/job-name': 'gone' } },
    spec: { jobName: 'gone', configTemplateName: '', config: {} },
  });
  const kept = 'kept-20261125-000000-aaaaa';
  const deleted = 'deleted-20261125-000000-bbbbb';
  const added = 'added-20261125-000000-ccccc';
  for (const name of [kept, deleted]) await bed.clients.custom.createNamespacedCustomObject({ ...where, body: application(name) });
  await eventually(async () => replica.cluster.cache.get(deleted), Boolean, { what: 'the replica to see both' });
  const listsBefore = await counter('submission_service_informer_lists_total', 'resource="applications"');

  // Cut off, the replica's watch cannot follow: one deletion and one creation happen unseen.
  proxy.sever();
  await bed.clients.custom.deleteNamespacedCustomObject({ ...where, name: deleted });
  await bed.clients.custom.createNamespacedCustomObject({ ...where, body: application(added) });
  // A restarted apiserver's watch cache starts at the current resourceVersion: a watch from
  // the older one the replica holds is answered 410 Gone ("too old resource version").
  await bed.restartTestbed();
  proxy.resume();

  await eventually(async () => [replica.cluster.cache.get(deleted), replica.cluster.cache.get(added)], ([d, a]) => d === undefined && a !== undefined, { what: 'the replica to see the deletion and the creation', timeoutMs: 60_000 });
  t.pass('the deletion and the creation it missed are seen');
  t.ok(replica.cluster.cache.get(kept), 'what did not change is still there');
  t.ok(await counter('submission_service_informer_lists_total', 'resource="applications"') > listsBefore, 'by a new list (the 410 path: a watch resumes without one)');
  const listed = await replica.app.inject({ method: 'GET', url: '/api/apps/?jobName=gone' });
  t.same(listed.json().items.map((i: { appName: string }) => i.appName).sort(), [added, kept].sort(), 'the API lists what the cluster holds');
});
