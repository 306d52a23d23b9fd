// What a driver pod's own service-account token may do on the real node, with the drivers'
// admission policy the test bed installs (cluster/kubernetes/driver-pods-policy.ts): the token
// read from inside the driver's container, as user code there reads it.
import { randomUUID } from 'node:crypto';
import type { CoreV1Api, V1OwnerReference, V1Pod } from '@kubernetes/client-node';
import type { Test } from 'tap';
import type { KubeClients } from '../../cluster/kubernetes/client.js';
import { DRIVER_CONTAINER } from '../../domain/index.js';
import { clientsWithToken, eventually } from './kubernetes.js';
import { execInPod } from './real-node.js';

/** Where the kubelet mounts a pod's service-account token (bound to that pod). */
const TOKEN_FILE = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/** 'done', or the apiserver's code and answer. */
const outcome = (call: () => Promise<unknown>) =>
  call().then(() => 'done', (error: { code?: number; body?: string }) => `${error.code} ${error.body ?? ''}`);

/**
 * Once Spark's driver runs its executors: it made their ConfigMap, owned by its pod (the policy
 * let that in); and with the token in `driver`'s running container (dry runs: nothing is made),
 * a ConfigMap its pod owns is allowed (the token and its Role work), while a ConfigMap or pod
 * owned by nobody, by another pod, or by its pod's name with another uid, and a pod that is no
 * executor, are refused by the policy named `policyName` (its name is in the apiserver's answer).
 */
export async function driverTokenOwnsOnly(t: Test, admin: KubeClients, driver: V1Pod, policyName: string, image: string): Promise<void> {
  const namespace = driver.metadata!.namespace!;
  t.not((await configMapsOwnedBy(admin.core, driver)).length, 0, "Spark's driver made its executors' ConfigMap, owned by its pod");
  const token = await execInPod(admin.kc, namespace, driver.metadata!.name!, DRIVER_CONTAINER, ['cat', TOKEN_FILE]);
  const asDriver = clientsWithToken(admin, token.trim());
  const own: V1OwnerReference = { apiVersion: 'v1', kind: 'Pod', name: driver.metadata!.name!, uid: driver.metadata!.uid! };
  const owners: Array<[string, V1OwnerReference[] | undefined]> = [
    ['owned by nobody', undefined],
    ['owned by another pod', [{ ...own, name: 'another-driver', uid: randomUUID() }]],
    ["owned by its pod's name with another uid", [{ ...own, uid: randomUUID() }]],
  ];
  const configMap = (ownerReferences?: V1OwnerReference[]) => ({ metadata: { generateName: 'probe-', ownerReferences }, data: { k: 'v' } });
  const pod = (labels: Record<string, string>, ownerReferences?: V1OwnerReference[]) => ({
    metadata: { generateName: 'probe-', labels, ownerReferences }, spec: { containers: [{ name: 'c', image }] },
  });
  const byPolicy = new RegExp(`^403 .*ValidatingAdmissionPolicy '${policyName}'`);
  t.equal(await outcome(() => asDriver.core.createNamespacedConfigMap({ namespace, body: configMap([own]), dryRun: 'All' })), 'done',
    "the driver's token: a ConfigMap its own pod owns is allowed (dry run)");
  for (const [how, owner] of owners) {
    t.match(await outcome(() => asDriver.core.createNamespacedConfigMap({ namespace, body: configMap(owner), dryRun: 'All' })), byPolicy,
      `the driver's token: a ConfigMap ${how} is refused by the drivers' policy`);
    // Labelled as no executor: not sent to the webhook, so the answer is the policy's alone.
    t.match(await outcome(() => asDriver.core.createNamespacedPod({ namespace, body: pod({ app: 'probe' }, owner), dryRun: 'All' })), byPolicy,
      `the driver's token: a pod ${how} is refused by the drivers' policy`);
  }
  t.match(await outcome(() => asDriver.core.createNamespacedPod({ namespace, body: pod({ app: 'probe' }, [own]), dryRun: 'All' })),
    /^403 .*may create executor pods only/, "the driver's token: a pod its own pod owns that is no executor is refused too");
}

/** The ConfigMaps `driver` owns (Spark's driver makes its executors' one so). */
export async function configMapsOwnedBy(core: CoreV1Api, driver: V1Pod) {
  const all = await core.listNamespacedConfigMap({ namespace: driver.metadata!.namespace! });
  return all.items.filter((c) => c.metadata?.ownerReferences?.some((o) => o.uid === driver.metadata!.uid));
}

/**
 * Spark's cleanup at its end (one deletecollection by label per kind) passed the policy, once
 * `driver` ended: no request of its refused in its log, and its ConfigMaps gone while their
 * owner, the driver pod, is still there (so not the garbage collector's doing). Returns that pod.
 */
export async function sparkCleanupAllowed(t: Test, core: CoreV1Api, driver: V1Pod, log: string): Promise<V1Pod> {
  t.notMatch(log, /forbidden|denied request/i, "the driver's log has no refused request");
  const left = await eventually(() => configMapsOwnedBy(core, driver), (found) => found.length === 0,
    { what: "Spark's ConfigMaps deleted", timeoutMs: 120_000, intervalMs: 1_000 });
  t.same(left, [], "Spark's driver deleted its ConfigMaps as it stopped");
  const kept = await core.readNamespacedPod({ name: driver.metadata!.name!, namespace: driver.metadata!.namespace! });
  t.ok(kept.metadata?.uid === driver.metadata!.uid && !kept.metadata?.deletionTimestamp,
    'while the driver pod that owns them is still there: Spark\'s cleanup deleted them, not the garbage collector');
  return kept;
}
