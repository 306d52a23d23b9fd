// Runs alone (scripts/test.sh): it starts the machine's one real node.
//
// The chart's NetworkPolicies (manifests/chart/templates/networkpolicy.yaml), enforced on the
// real node by kube-router's policy controller (testbed/node-policy.ts), with stand-in pods
// carrying the labels the chart's pods and Spark's pods carry, and each application's own policy
// as the api makes it (cluster/kubernetes/app-network-policy.ts): an attacker's driver or
// executor can open neither another application's Spark UI port, nor its other ports, nor the
// History Server, while the service's pods (the api's proxy, the notebook service) reach them
// and an application's driver and executors reach one another. The same connections succeed
// before the policies exist and again after they are deleted: the policy, not the network, is
// what refuses them.
import { execFileSync } from 'node:child_process';
import { PassThrough } from 'node:stream';
import { type CoreV1Api, Exec, type KubeConfig, NetworkingV1Api, type V1NetworkPolicy, type V1Pod } from '@kubernetes/client-node';
import t from 'tap';
import { eventually } from '../helpers/kubernetes.js';
import { realNodeUnavailable, startRealNodeBed } from '../helpers/real-node.js';
import { RELEASE_NAMESPACE, ofKind, renderChart } from '../manifests/helm.js';
import { TEST_IMAGE } from '../../testbed/node-config.js';
import { nodeChains } from '../../testbed/node-cleanup.js';
import { policyEnforcedFor, policyIpsets } from '../../testbed/node-policy.js';
import { appNetworkPolicy } from '../../cluster/kubernetes/app-network-policy.js';
import { deleteJson, postJson } from '../../cluster/kubernetes/json-call.js';

const unavailable = realNodeUnavailable({ enforceNetworkPolicy: true });
const APPS = 'spark-apps';
const HISTORY = { 'history.eventLogDir': 's3a://logs/spark-events', 'history.server.image': 'spark-runtime:1', applicationsNamespace: APPS };
const component = (name: string) => ({ 'app.kubernetes.io/name': 'submission-service', 'app.kubernetes.io/instance': 'ss', 'app.kubernetes.io/component': name });

/** A long-running testbox pod serving HTTP on each of `ports` (one container per port). */
function server(name: string, namespace: string, labels: Record<string, string>, ports: number[]): V1Pod {
  return {
    metadata: { name, namespace, labels },
    spec: {
      terminationGracePeriodSeconds: 1,
      containers: ports.map((port, i) => ({
        name: i === 0 ? 'main' : `serve-${port}`, image: TEST_IMAGE, imagePullPolicy: 'IfNotPresent', args: ['serve', String(port)],
        readinessProbe: { httpGet: { path: '/', port }, periodSeconds: 1 },
      })),
    },
  };
}

/** `testbox get URL` run inside `pod` (through the apiserver's exec): its answer, or why it failed. */
async function getFrom(kc: KubeConfig, namespace: string, pod: string, url: string): Promise<{ ok: boolean; output: string }> {
  const out = new PassThrough();
  let output = '';
  out.on('data', (d: Buffer) => { output += d.toString(); });
  const status = await new Promise<string>((ok, fail) => {
    new Exec(kc).exec(namespace, pod, 'main', ['/testbox', 'get', url], out, out, null, false, (s) => ok(s.status ?? 'none')).catch(fail);
  });
  return { ok: status === 'Success', output: output.trim() };
}

/** The stand-ins, Ready, and the History Server's Service routed: each pod's address. */
async function startPods(core: CoreV1Api): Promise<Record<string, string>> {
  for (const name of [RELEASE_NAMESPACE, APPS]) {
    await core.createNamespace({ body: { metadata: { name } } });
    await eventually(() => core.readNamespacedServiceAccount({ name: 'default', namespace: name }), () => true, { what: `the default ServiceAccount of ${name}`, timeoutMs: 60_000 });
  }
  const pods = [
    server('history', RELEASE_NAMESPACE, component('history'), [18080]),
    server('api', RELEASE_NAMESPACE, component('api'), [8080]),
    server('gateway', RELEASE_NAMESPACE, component('gateway'), [8080]),
    // Spark's own labels on the application's pods, and the one the service adds.
    server('driver-a', APPS, { 'spark-role': 'driver', 'submission-service/app-name': 'a-1' }, [4040, 7078]),
    server('executor-a', APPS, { 'spark-role': 'executor', 'submission-service/app-name': 'a-1' }, [8080]),
    server('driver-b', APPS, { 'spark-role': 'driver', 'submission-service/app-name': 'b-1' }, [4040]),
    server('executor-b', APPS, { 'spark-role': 'executor', 'submission-service/app-name': 'b-1' }, [8080]),
  ];
  for (const pod of pods) await core.createNamespacedPod({ namespace: pod.metadata!.namespace!, body: pod });
  const ip: Record<string, string> = {};
  for (const pod of pods) {
    const { name, namespace } = pod.metadata as { name: string; namespace: string };
    const running = await eventually(() => core.readNamespacedPod({ name, namespace }),
      (p) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false, { what: `pod ${name} Ready`, timeoutMs: 180_000 });
    ip[name] = running.status!.podIP!;
  }
  // The History Server as the api reaches it: by its Service (kube-proxy DNATs, then masquerades
  // after the filter table has judged the pod's own address).
  await core.createNamespacedService({ namespace: RELEASE_NAMESPACE, body: { metadata: { name: 'history' }, spec: { selector: component('history'), ports: [{ port: 18080 }] } } });
  await eventually(async () => execFileSync('iptables-save', ['-t', 'nat'], { encoding: 'utf8' }),
    (rules) => rules.split('\n').some((line) => line.startsWith('-A KUBE-SEP-') && line.includes(`${RELEASE_NAMESPACE}/history`)),
    { what: "kube-proxy's endpoint rule for the History Server's Service", timeoutMs: 120_000 });
  return ip;
}

t.test('on a node that enforces NetworkPolicy, a driver reaches neither another run\'s pods nor the History Server; the service reaches both, an application\'s pods each other', { skip: unavailable }, async (t) => {
  const { core, kc, node } = await startRealNodeBed(t, { enforceNetworkPolicy: true });
  const networking = kc.makeApiClient(NetworkingV1Api);
  const ip = await startPods(core);
  const driverUi = `http://${ip['driver-a']}:4040/`;
  const history = `http://${ip.history}:18080/`;
  const historyService = `http://history.${RELEASE_NAMESPACE}.svc.cluster.local:18080/`;
  const driverRpc = `http://${ip['driver-a']}:7078/`;
  const executorA = `http://${ip['executor-a']}:8080/`;
  const attempts = async () => ({
    attackerToUi: await getFrom(kc, APPS, 'driver-b', driverUi),
    attackerToHistory: await getFrom(kc, APPS, 'driver-b', history),
    attackerToHistoryService: await getFrom(kc, APPS, 'driver-b', historyService),
    attackerToRpc: await getFrom(kc, APPS, 'driver-b', driverRpc),
    attackerExecutorToRpc: await getFrom(kc, APPS, 'executor-b', driverRpc),
    attackerToExecutor: await getFrom(kc, APPS, 'driver-b', executorA),
  });

  const before = await attempts();
  const driverA = { ok: true, output: 'driver-a' };
  t.same(before, { attackerToUi: driverA, attackerToHistory: { ok: true, output: 'history' }, attackerToHistoryService: { ok: true, output: 'history' },
    attackerToRpc: driverA, attackerExecutorToRpc: driverA, attackerToExecutor: { ok: true, output: 'executor-a' } },
    'without the policies, the pod network carries both connections');

  const policies = ofKind<V1NetworkPolicy>(renderChart(HISTORY), 'NetworkPolicy');
  t.same(policies.map((p) => p.metadata!.name).sort(), ['submission-service-driver-ui', 'submission-service-history'], 'the chart\'s two policies');
  for (const policy of policies) await networking.createNamespacedNetworkPolicy({ namespace: policy.metadata!.namespace!, body: policy });
  // Each application's own, as the api makes it (without the owner: no Application here).
  for (const app of ['a-1', 'b-1']) {
    const own = appNetworkPolicy(app, { apiVersion: 'v1', kind: 'Application', name: app, uid: 'none' });
    delete own.metadata.ownerReferences;
    await postJson(kc, `/apis/networking.k8s.io/v1/namespaces/${APPS}/networkpolicies`, own);
  }
  // Readiness, not time: kube-router has put each policy into the chain of the pod it selects.
  const enforced = () => ['driver-a', 'driver-b'].every((pod) => policyEnforcedFor('submission-service-driver-ui', pod, APPS))
    && policyEnforcedFor('submission-service-history', 'history', RELEASE_NAMESPACE)
    && ['driver-a', 'executor-a'].every((pod) => policyEnforcedFor('a-1-pods', pod, APPS))
    && ['driver-b', 'executor-b'].every((pod) => policyEnforcedFor('b-1-pods', pod, APPS));
  await eventually(async () => enforced(), (yes) => yes, { what: 'kube-router to enforce the chart\'s policies', timeoutMs: 120_000 });

  const during = await attempts();
  t.notOk(during.attackerToUi.ok, `another application's driver cannot open the Spark UI port (${during.attackerToUi.output})`);
  t.match(during.attackerToUi.output, /connection refused/, 'refused by the policy\'s REJECT');
  t.notOk(during.attackerToHistory.ok, `nor the History Server (${during.attackerToHistory.output})`);
  t.match(during.attackerToHistory.output, /connection refused/);
  t.notOk(during.attackerToHistoryService.ok, `nor through its Service (${during.attackerToHistoryService.output})`);
  t.notOk(during.attackerToRpc.ok, `nor the driver's other ports (${during.attackerToRpc.output})`);
  t.notOk(during.attackerExecutorToRpc.ok, `nor can the other application's executor (${during.attackerExecutorToRpc.output})`);
  t.notOk(during.attackerToExecutor.ok, `nor does the other driver reach this application's executor (${during.attackerToExecutor.output})`);
  t.same(await getFrom(kc, RELEASE_NAMESPACE, 'api', driverUi), { ok: true, output: 'driver-a' }, 'the api\'s proxy reaches the driver\'s UI');
  t.same(await getFrom(kc, RELEASE_NAMESPACE, 'gateway', driverUi), { ok: true, output: 'driver-a' }, 'so does the notebook service');
  t.same(await getFrom(kc, RELEASE_NAMESPACE, 'api', history), { ok: true, output: 'history' }, 'the api reaches the History Server');
  t.same(await getFrom(kc, RELEASE_NAMESPACE, 'api', historyService), { ok: true, output: 'history' }, 'by its Service too');
  t.notOk((await getFrom(kc, RELEASE_NAMESPACE, 'gateway', history)).ok, 'the notebook service does not');
  t.same(await getFrom(kc, APPS, 'executor-a', driverRpc), driverA, 'an executor reaches its own driver\'s RPC port');
  t.same(await getFrom(kc, APPS, 'executor-a', driverUi), driverA, 'and its UI port (same application)');
  t.same(await getFrom(kc, APPS, 'driver-a', executorA), { ok: true, output: 'executor-a' }, 'the driver reaches its executor');
  t.same(await getFrom(kc, RELEASE_NAMESPACE, 'gateway', driverRpc), driverA, 'the notebook service reaches a driver\'s other ports (kernels)');

  for (const policy of policies) await networking.deleteNamespacedNetworkPolicy({ name: policy.metadata!.name!, namespace: policy.metadata!.namespace! });
  for (const app of ['a-1', 'b-1']) await deleteJson(kc, `/apis/networking.k8s.io/v1/namespaces/${APPS}/networkpolicies/${app}-pods`, {});
  await eventually(async () => ['driver-a', 'driver-b'].some((pod) => policyEnforcedFor('submission-service-driver-ui', pod, APPS))
    || policyEnforcedFor('submission-service-history', 'history', RELEASE_NAMESPACE) || policyEnforcedFor('a-1-pods', 'executor-a', APPS),
  (yes) => !yes, { what: 'kube-router to drop the policies', timeoutMs: 120_000 });
  t.same(await attempts(), before, 'with the policies deleted, the same connections succeed again: the policy is what refused them');

  await node.stop();
  t.same(nodeChains(), [], 'no KUBE-ROUTER-*, KUBE-POD-FW-* or KUBE-NWPLCY-* chain left');
  t.same(policyIpsets(), [], 'nor one of kube-router\'s ipsets');
});
