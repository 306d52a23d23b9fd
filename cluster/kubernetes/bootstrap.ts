// Puts what the service needs into a cluster that has none of it: the namespace, the
// CRDs (generated from schemas/), and for the test bed, Node objects for each pool.
import { ApiextensionsV1Api, loadYaml, RbacAuthorizationV1Api, type V1CustomResourceDefinition, type V1Node } from '@kubernetes/client-node';
import { allCrds } from '../../schemas/crd.js';
import { type AdmissionRules, podMemoryMib, type ResolvedPool } from '../../domain/index.js';
import type { KubeClients } from './client.js';
import { ensureDriverPodsPolicy } from './driver-pods-policy.js';
import { unlessExists } from './errors.js';

export async function ensureNamespace(clients: KubeClients, name: string): Promise<void> {
  await clients.core.createNamespace({ body: { metadata: { name } } }).catch(unlessExists);
}

export async function ensureCrds(clients: KubeClients): Promise<void> {
  const api = clients.kc.makeApiClient(ApiextensionsV1Api);
  // Through loadYaml: the client's serializer keeps only fields of its typed models, so a
  // plain object would lose keywords such as `enum` on the way.
  const crds = allCrds().map((c) => loadYaml<V1CustomResourceDefinition>(JSON.stringify(c)));
  for (const crd of crds) {
    await api.createCustomResourceDefinition({ body: crd }).catch(unlessExists);
  }
  // The apiserver serves a new CRD's resources a moment after accepting it, and answers
  // 429 "storage is (re)initializing" until then: wait until a list works.
  for (const crd of crds) {
    const { group, names, versions } = crd.spec;
    for (let i = 0; ; i++) {
      try {
        await clients.custom.listClusterCustomObject({ group, version: versions[0].name, plural: names.plural });
        break;
      } catch (error) {
        if (i >= 300) throw error;
        await new Promise((ok) => setTimeout(ok, 100));
      }
    }
  }
}

/**
 * A Node object standing for one node of a pool (no kubelet runs it: a test double for the
 * scheduler). Allocatable is what SPEC's figures leave for our pods: the schedulable CPU,
 * and what a pod with the schedulable memory requests (plus Spark's overhead, podMemoryMib).
 */
export function fakeNode(pool: ResolvedPool, index: number, rules: AdmissionRules): V1Node {
  const { instanceTypeLabel, preemptibleLabel, preemptibleTaints } = rules.placement;
  const memory = podMemoryMib(pool.maximumSchedulableMemoryRequestMib, rules.sizing.memoryOverheadFactor);
  const capacity = { cpu: String(pool.cpu), memory: `${pool.memoryMib}Mi`, pods: '110' };
  return {
    metadata: {
      name: `${pool.instanceName}-${index}`.toLowerCase(),
      labels: {
        [instanceTypeLabel]: pool.instanceName,
        'kubernetes.io/os': 'linux',
        'submission-service/test-double': 'fake-node',
        ...(pool.preemptible ? { [preemptibleLabel.key]: preemptibleLabel.value } : {}),
      },
    },
    spec: { taints: pool.preemptible ? preemptibleTaints.map((t) => ({ ...t })) : [] },
    status: {
      capacity,
      allocatable: { cpu: `${pool.maxCoreMillicores}m`, memory: `${memory}Mi`, pods: '110' },
      conditions: [{ type: 'Ready', status: 'True', reason: 'FakeNode', message: 'a test double: no kubelet runs here' }],
    },
  };
}

/** Creates `perPool` fake nodes per pool and marks them Ready (status is a subresource). */
export async function createFakeNodes(clients: KubeClients, rules: AdmissionRules, perPool = 1): Promise<string[]> {
  const names: string[] = [];
  for (const pool of rules.pools) {
    for (let i = 0; i < perPool; i++) {
      const node = fakeNode(pool, i, rules);
      await clients.core.createNode({ body: node }).catch(unlessExists);
      await clients.core.replaceNodeStatus({
        name: node.metadata!.name!,
        body: { ...(await clients.core.readNode({ name: node.metadata!.name! })), status: node.status },
      });
      names.push(node.metadata!.name!);
    }
  }
  return names;
}

/**
 * The chart's spark-driver Role (manifests/chart/templates/rbac.yaml, which says why each verb):
 * what Spark's driver does with its token and no more. Kept equal to the chart's by
 * test/manifests/chart.test.ts.
 */
export const DRIVER_ROLE_RULES = [
  { apiGroups: [''], resources: ['pods'], verbs: ['create', 'get', 'list', 'watch', 'delete', 'deletecollection'] },
  { apiGroups: [''], resources: ['configmaps'], verbs: ['create', 'deletecollection'] },
  { apiGroups: [''], resources: ['persistentvolumeclaims'], verbs: ['create', 'list', 'deletecollection'] },
  { apiGroups: [''], resources: ['services'], verbs: ['deletecollection'] },
];

/**
 * The service account Spark drivers run as, with the chart's Role and its drivers' admission
 * policy (driver-pods-policy.ts), over `name` and the accounts submissions may name
 * (`otherAccounts`, the rules' policy.serviceAccounts), as the chart's covers. For a cluster with
 * real kubelets where the chart is not installed (`testbed up --real-node`).
 */
export async function ensureDriverAccount(clients: KubeClients, namespace: string, name: string, otherAccounts: string[] = []): Promise<void> {
  // The policy first: no token of the account is used before its rules are there.
  await ensureDriverPodsPolicy(clients, namespace, [name, ...otherAccounts]);
  const rbac = clients.kc.makeApiClient(RbacAuthorizationV1Api);
  await clients.core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } }).catch(unlessExists);
  await rbac.createNamespacedRole({ namespace, body: {
    metadata: { name },
    rules: DRIVER_ROLE_RULES,
  } }).catch(unlessExists);
  await rbac.createNamespacedRoleBinding({ namespace, body: {
    metadata: { name },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
    subjects: [{ kind: 'ServiceAccount', name, namespace }],
  } }).catch(unlessExists);
}
