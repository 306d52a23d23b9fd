// An application's own NetworkPolicy (issue 25): its driver and executors admit one another on
// every port (Spark's driver and executors dial each other: RPC, block managers, shuffle) and
// no pod of another application. The chart's policies add the service's own pods (the api's
// proxy, the notebook service); nothing else reaches an application's pods. One per
// application because a NetworkPolicy cannot say "the same label value as mine"; owned by the
// Application, so the garbage collector removes it with the run.
import type { V1LabelSelector, V1ObjectMeta, V1OwnerReference } from '@kubernetes/client-node';
import { LABEL_APP } from '../../domain/index.js';

/** As the apiserver reads it (`from`; the client library's typed model says `_from`): posted as JSON. */
export interface NetworkPolicyJson {
  apiVersion: 'networking.k8s.io/v1';
  kind: 'NetworkPolicy';
  metadata: V1ObjectMeta;
  spec: { podSelector: V1LabelSelector; policyTypes: string[]; ingress: { from: { podSelector: V1LabelSelector }[] }[] };
}

export const appNetworkPolicyName = (appName: string): string => `${appName}-pods`;

export function appNetworkPolicy(appName: string, owner: V1OwnerReference): NetworkPolicyJson {
  const ownPods = { matchLabels: { [LABEL_APP]: appName } };
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: appNetworkPolicyName(appName), labels: { [LABEL_APP]: appName }, ownerReferences: [{ ...owner, controller: false }] },
    spec: { podSelector: ownPods, policyTypes: ['Ingress'], ingress: [{ from: [{ podSelector: ownPods }] }] },
  };
}
