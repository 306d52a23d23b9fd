// A ValidatingAdmissionPolicy bound to one namespace, as the test bed installs the chart's
// policies where the chart is not (`testbed up --real-node`): the drivers' DNS names
// (driver-service.ts) and what a driver's token may make (driver-pods-policy.ts).
import { AdmissionregistrationV1Api, type V1ValidatingAdmissionPolicy, type V1ValidatingAdmissionPolicyBinding } from '@kubernetes/client-node';
import type { KubeClients } from './client.js';
import { unlessExists } from './errors.js';

export interface NamespacePolicy { policy: V1ValidatingAdmissionPolicy; binding: V1ValidatingAdmissionPolicyBinding }

/** The binding that denies what policy `name` refuses, in `namespace` only. */
export function namespaceBinding(name: string, namespace: string): V1ValidatingAdmissionPolicyBinding {
  return {
    metadata: { name },
    spec: {
      policyName: name, validationActions: ['Deny'],
      matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': namespace } } },
    },
  };
}

/** Creates the policy, then its binding (either kept if it exists already). */
export async function ensureNamespacePolicy(clients: KubeClients, { policy, binding }: NamespacePolicy): Promise<void> {
  const admission = clients.kc.makeApiClient(AdmissionregistrationV1Api);
  await admission.createValidatingAdmissionPolicy({ body: policy }).catch(unlessExists);
  await admission.createValidatingAdmissionPolicyBinding({ body: binding }).catch(unlessExists);
}
