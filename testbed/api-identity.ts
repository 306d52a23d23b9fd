// The test bed's API writes with an identity of its own, as the chart's API does with its
// service account: the webhook configuration lets that user's admitted driver pods through
// without a call (webhook/server/registration.ts, apiUser), while the tests and the benches
// keep the admin's client certificate, whose pods are still sent to the webhook.
// A ServiceAccount in the applications namespace, a token for it (TokenRequest), and a
// kubeconfig with that token beside the test bed's own.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RbacAuthorizationV1Api } from '@kubernetes/client-node';
import type { KubeClients } from '../cluster/kubernetes/client.js';
import { unlessExists } from '../cluster/kubernetes/errors.js';

/** The name the chart gives the API's service account (manifests/chart/templates/serviceaccounts.yaml). */
export const API_SERVICE_ACCOUNT = 'submission-service-api';

/** Long enough for a `testbed up` kept for weeks; the bed's signing key stays across --keep restarts. */
const TOKEN_SECONDS = 30 * 24 * 3600;

export interface ApiIdentity {
  /** A kubeconfig for the API: the bed's server and CA, the service account's token. */
  kubeconfig: string;
  /** The username the apiserver authenticates it as. */
  user: string;
}

export const serviceAccountUser = (namespace: string, name: string) => `system:serviceaccount:${namespace}:${name}`;

/**
 * The API's service account in `namespace`, bound to cluster-admin: on the test bed the API
 * had the admin's rights before it had an identity, and keeps them (the chart's Roles are
 * checked where the chart is installed). Writes DIR/api.kubeconfig.
 */
export async function ensureApiIdentity(clients: KubeClients, namespace: string, dir: string): Promise<ApiIdentity> {
  const name = API_SERVICE_ACCOUNT;
  await clients.core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } }).catch(unlessExists);
  const rbac = clients.kc.makeApiClient(RbacAuthorizationV1Api);
  await rbac.createClusterRoleBinding({ body: {
    metadata: { name: `${name}-${namespace}` },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
    subjects: [{ kind: 'ServiceAccount', name, namespace }],
  } }).catch(unlessExists);
  const request = await clients.core.createNamespacedServiceAccountToken({
    name, namespace, body: { spec: { audiences: [], expirationSeconds: TOKEN_SECONDS } },
  });
  const cluster = clients.kc.getCurrentCluster()!;
  const user = serviceAccountUser(namespace, name);
  const kubeconfig = join(dir, 'api.kubeconfig');
  writeFileSync(kubeconfig, JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{
      name: 'testbed',
      cluster: {
        server: cluster.server,
        ...(cluster.caData ? { 'certificate-authority-data': cluster.caData } : { 'certificate-authority': cluster.caFile }),
      },
    }],
    users: [{ name: user, user: { token: request.status!.token } }],
    contexts: [{ name: 'api', context: { cluster: 'testbed', user, namespace } }],
    'current-context': 'api',
  }), { mode: 0o600 });
  return { kubeconfig, user };
}
