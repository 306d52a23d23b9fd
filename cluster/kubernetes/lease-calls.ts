// The three Lease calls of leader election (leader-election.ts) as plain JSON calls on the
// kept-alive agent (json-call.ts). Every replica makes two of them every retry period (2 s),
// leader or not, for as long as it runs. Through client-node each one opened a new TLS
// connection (its agent is not kept alive: apiserver.ts) and ran its generated layer; here they
// reuse a connection. The names and arguments are client-node's, so a test's fake stands in for
// either. Answers are the apiserver's JSON as it is: a Lease another client wrote with
// microsecond times (acquireTime, renewTime) is written back with them unchanged, where
// client-node's Date would have lost the digits the apiserver wants.
import type { KubeConfig, V1Lease } from '@kubernetes/client-node';
import { getJson, postJson, putJson } from './json-call.js';

export interface LeaseApi {
  readNamespacedLease(where: { name: string; namespace: string }, signal?: AbortSignal): Promise<V1Lease>;
  createNamespacedLease(where: { namespace: string; body: V1Lease }, signal?: AbortSignal): Promise<V1Lease>;
  replaceNamespacedLease(where: { name: string; namespace: string; body: V1Lease }, signal?: AbortSignal): Promise<V1Lease>;
}

const leases = (namespace: string) => `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/leases`;

export function jsonLeaseApi(kc: KubeConfig): LeaseApi {
  return {
    readNamespacedLease: ({ name, namespace }, signal) => getJson<V1Lease>(kc, `${leases(namespace)}/${encodeURIComponent(name)}`, signal),
    createNamespacedLease: ({ namespace, body }, signal) => postJson<V1Lease>(kc, leases(namespace), { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', ...body }, signal),
    replaceNamespacedLease: ({ name, namespace, body }, signal) =>
      putJson<V1Lease>(kc, `${leases(namespace)}/${encodeURIComponent(name)}`, { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', ...body }, signal),
  };
}
