// Where the real kube-scheduler puts our pods, given fake nodes (test doubles: Node
// objects, no kubelet) for the three pools of the example cluster, one node each.
// Allocatable per node: 1700m / 3400m / 6800m CPU; the memory SPEC leaves, times 1.4.
import t from 'tap';
import type { V1Pod } from '@kubernetes/client-node';
import { exampleCluster } from '../helpers/api.js';
import { eventually, fakeKubeletFinishDeletion, sparkExecutorPod, startKubeBed } from '../helpers/kubernetes.js';

const pools = exampleCluster().nodePools;
const nodeOf = (instanceName: string) => `${instanceName}-0`;
const [small, medium, large] = pools.map((p) => nodeOf(p.instanceName));

t.test('placement by the real scheduler', async (t) => {
  const bed = await startKubeBed(t, { scheduler: true, nodes: true });
  const { core } = bed.clients;
  const namespace = bed.namespace;
  const read = (name: string) => core.readNamespacedPod({ name, namespace });
  const scheduled = (name: string) => eventually(() => read(name), (p) => Boolean(p.spec?.nodeName), { what: `${name} to be bound` });
  const refused = (p: V1Pod) => p.status?.conditions?.some((c) => c.type === 'PodScheduled' && c.status === 'False' && c.reason === 'Unschedulable') ?? false;
  const unschedulable = (name: string) => eventually(() => read(name), refused, { what: `the scheduler to give up on ${name}` });
  const cordon = (name: string, unschedulable: boolean) =>
    core.patchNode({ name, body: [{ op: 'replace', path: '/spec/unschedulable', value: unschedulable }] });

  t.same((await core.listNode()).items.map((n) => n.metadata!.name).sort(), [small, medium, large].sort(), 'one fake node per pool');

  // One application per executor size; their (default) drivers go first.
  const apps: Record<number, { appName: string; driver: V1Pod }> = {};
  for (const cores of [6, 4, 2]) {
    const res = await bed.call('POST', '/api/apps/', { jobName: `place${cores}`, configOverrides: { executor: { cores } } });
    t.equal(res.status, 201);
    apps[cores] = { appName: res.json.appName, driver: await read(res.json.appName) };
  }

  t.test('a default driver is bound to the n1-standard-2 node', async (t) => {
    const driver = await scheduled(apps[6].appName);
    t.equal(driver.spec!.nodeName, small);
    // 1700m holds two 710m drivers; the third waits rather than go to a preemptible node.
    t.equal((await scheduled(apps[4].appName)).spec!.nodeName, small);
    const third = await unschedulable(apps[2].appName);
    t.notOk(third.spec!.nodeName, 'the third driver stays unbound');
    // The API (and the controller's status) says why, in the scheduler's words.
    const app = await eventually(() => bed.call('GET', `/api/apps/${apps[2].appName}`), (r) => /^Unschedulable: /.test(r.json?.stateDetail ?? ''), { what: 'Unschedulable in stateDetail' });
    t.equal(app.json.state, 'PENDING');
    t.match(app.json.stateDetail, /Insufficient cpu/, `stateDetail: ${app.json.stateDetail}`);
    const written = await eventually(async () => (await bed.applications()).find((a) => a.metadata.name === apps[2].appName), (a) => /^Unschedulable/.test(a?.status?.stateDetail ?? ''), { what: 'the controller to write it' });
    t.equal(written?.status.state, 'PENDING', 'written into the Application status');
  });

  t.test('executors land on the pool they were sized for: nowhere smaller fits', async (t) => {
    // The webhook reads a driver on its first executor. The 2-core application's executor below
    // comes after its driver is gone: a dry run of one now, while it runs, as Spark's first request.
    await core.createNamespacedPod({ namespace, body: sparkExecutorPod(apps[2].driver, 0, namespace), dryRun: 'All' });
    // 6 cores: 5100m fits only the 8-core node (the others allow 1700m and 3400m).
    const e6 = await core.createNamespacedPod({ namespace, body: sparkExecutorPod(apps[6].driver, 1, namespace) });
    t.equal(e6.spec!.containers[0].resources?.requests?.cpu, '5100m');
    t.equal((await scheduled(e6.metadata!.name!)).spec!.nodeName, large, '6 cores: the 8-core pool');
    // 4 cores: 3400m fits the 4-core node only (1700m is left on the 8-core one).
    const e4 = await core.createNamespacedPod({ namespace, body: sparkExecutorPod(apps[4].driver, 1, namespace) });
    t.equal(e4.spec!.containers[0].resources?.requests?.cpu, '3400m');
    t.equal((await scheduled(e4.metadata!.name!)).spec!.nodeName, medium, '4 cores: the 4-core pool');
    // 2 cores: 1700m needs a whole 2-core node, so its drivers are stopped (the webhook keeps
    // their configs for late executors). The 8-core node has exactly 1700m left: cordoned here.
    for (const { appName } of Object.values(apps)) t.equal((await bed.call('POST', `/api/apps/${appName}/stop`)).status, 200);
    for (const { appName } of Object.values(apps)) await fakeKubeletFinishDeletion(bed.clients, namespace, appName);
    await eventually(() => bed.pods('spark-role=driver'), (pods) => pods.length === 0, { what: 'the drivers to go' });
    await cordon(large, true);
    // The scheduler learns of the deletions from its own watch, which can lag ours on a loaded
    // machine; a pod it found no room for then waits in its unschedulable queue for minutes.
    // So a pod refused before the scheduler saw the room is made again (a new executor).
    // Its driver pod is gone, so it carries no ownerReference: the test bed's garbage collector,
    // as a real cluster's, deletes a pod whose owner no longer exists (seen under CI load).
    let e2: V1Pod | undefined;
    for (let attempt = 1; attempt <= 3 && !e2?.spec?.nodeName; attempt++) {
      const late = sparkExecutorPod(apps[2].driver, attempt, namespace);
      delete late.metadata!.ownerReferences;
      const created = await core.createNamespacedPod({ namespace, body: late });
      t.equal(created.spec!.containers[0].resources?.requests?.cpu, '1700m');
      e2 = await eventually(() => read(created.metadata!.name!), (p) => Boolean(p.spec?.nodeName) || refused(p), { what: `${created.metadata!.name} to be bound or refused` });
      if (!e2.spec?.nodeName) await core.deleteNamespacedPod({ name: created.metadata!.name!, namespace, gracePeriodSeconds: 0 });
    }
    t.equal(e2?.spec?.nodeName, small, '2 cores: the 2-core pool');
    await cordon(large, false);
  });

  t.test('a driver never lands on a preemptible node, even when the stable node is full', async (t) => {
    // The 2-core node is full (the 2-core executor); the 8-core node has 1700m free again.
    const res = await bed.call('POST', '/api/apps/', { jobName: 'nowhere' });
    t.equal(res.status, 201);
    const pod = await unschedulable(res.json.appName);
    t.notOk(pod.spec!.nodeName, 'unbound');
    const condition = pod.status!.conditions!.find((c) => c.type === 'PodScheduled')!;
    t.match(condition.message, /Insufficient cpu/, `the scheduler says why: ${condition.message}`);
    t.match(condition.message, /2 node\(s\) had untolerated taint/, 'the preemptible nodes are refused');
    // A retry the scheduler must make: one more preemptible node, empty. The scheduler takes the
    // node count into its answer, so "0/N+1" says it tried again with that node in view.
    const preemptible = (await core.listNode({ labelSelector: 'submission-service/preemptible=true' })).items;
    const total = (await core.listNode()).items.length;
    const extra = `${preemptible[0].metadata!.name}-extra`;
    await core.createNode({ body: { metadata: { name: extra, labels: preemptible[0].metadata!.labels }, spec: { taints: preemptible[0].spec!.taints } } });
    await core.replaceNodeStatus({ name: extra, body: { ...(await core.readNode({ name: extra })), status: preemptible[0].status } });
    const retried = await eventually(() => read(res.json.appName), (p) => Boolean(p.spec?.nodeName) || (p.status?.conditions ?? []).some((c) => c.type === 'PodScheduled' && c.message?.startsWith(`0/${total + 1} nodes`)), { timeoutMs: 120_000, what: 'the scheduler to try again with the new node' });
    t.notOk(retried.spec!.nodeName, 'still unbound after a retry with an empty preemptible node in view');
    t.match(retried.status!.conditions!.find((c) => c.type === 'PodScheduled')!.message, `${preemptible.length + 1} node(s) had untolerated taint`, 'all preemptible nodes refused');
    await core.deleteNode({ name: extra });
    const spot = await core.listNode({ labelSelector: 'submission-service/preemptible=true' });
    t.equal(spot.items.length, 2, 'while two preemptible nodes exist');
  });
});
