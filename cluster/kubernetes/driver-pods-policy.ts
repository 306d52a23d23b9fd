// The drivers' admission policy: what user code may create, change and delete with a driver's
// service-account token (manifests/chart/templates/driver-pod-policy.yaml says why each rule).
// The chart's template and this are the same objects, checked equal by
// test/manifests/chart.test.ts; this one is what `testbed up --real-node` and the test beds
// that run Spark's own drivers install, so those drivers run under the chart's rules.
import { SPARK_ROLE } from '../../domain/index.js';
import type { KubeClients } from './client.js';
import { ensureNamespacePolicy, namespaceBinding, type NamespacePolicy } from './namespace-policy.js';

/** The bound token's claims that name the pod it was issued for (the kubelet's projected tokens carry them). */
const claim = (name: string) =>
  `'authentication.kubernetes.io/${name}' in request.userInfo.extra ? request.userInfo.extra['authentication.kubernetes.io/${name}'][0] : ''`;

/**
 * The policy and its binding for the drivers' accounts of `namespace` (the first is the
 * drivers' own, the rest those submissions may name; each once). `suffix` ends their names:
 * the chart's release namespace, so two releases keep two policies.
 */
export function driverPodsPolicy(namespace: string, accounts: string[], suffix: string): NamespacePolicy {
  const name = `submission-service-driver-pods-${suffix}`;
  const users = [...new Set(accounts)].map((a) => JSON.stringify(`system:serviceaccount:${namespace}:${a}`));
  const operations = ['CREATE', 'UPDATE', 'DELETE'];
  return {
    policy: {
      metadata: { name },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: {
          resourceRules: [
            { apiGroups: [''], apiVersions: ['v1'], operations, resources: ['pods'] },
            { apiGroups: [''], apiVersions: ['v1'], operations, resources: ['configmaps', 'services', 'persistentvolumeclaims'] },
          ],
        },
        matchConditions: [{ name: 'a-drivers-service-account', expression: `request.userInfo.username in [${users.join(', ')}]` }],
        variables: [
          { name: 'requester', expression: claim('pod-name') },
          { name: 'requesterUid', expression: claim('pod-uid') },
          { name: 'target', expression: "request.operation == 'DELETE' ? oldObject : object" },
          {
            name: 'ownedByRequester',
            expression: "variables.requester != '' && variables.requesterUid != '' && has(variables.target.metadata.ownerReferences) && "
              + "variables.target.metadata.ownerReferences.exists(r, r.kind == 'Pod' && r.name == variables.requester && r.uid == variables.requesterUid)",
          },
        ],
        validations: [
          {
            expression: "request.operation != 'CREATE' || request.resource.resource != 'pods' || "
              + `(has(object.metadata.labels) && '${SPARK_ROLE}' in object.metadata.labels && object.metadata.labels['${SPARK_ROLE}'] == 'executor')`,
            message: "a driver's service account may create executor pods only",
            reason: 'Forbidden',
          },
          {
            expression: 'variables.ownedByRequester',
            message: "a driver's service account may create, change and delete only the executor pods, ConfigMaps, Services and PVCs its own driver pod owns",
            reason: 'Forbidden',
          },
        ],
      },
    },
    binding: namespaceBinding(name, namespace),
  };
}

/** For a cluster without the chart: the policy named after the applications namespace (no release namespace there). */
export async function ensureDriverPodsPolicy(clients: KubeClients, namespace: string, accounts: string[]): Promise<void> {
  await ensureNamespacePolicy(clients, driverPodsPolicy(namespace, accounts, namespace));
}
