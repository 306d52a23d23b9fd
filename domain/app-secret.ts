// A Secret that holds one token of one application's (a kernel launcher's, a Connect server's):
// immutable, labelled with the application, owned by its Application so that the garbage
// collector removes it with it (not as controller: the Application's controller is ours). Pure.
import type { V1OwnerReference, V1Secret } from '@kubernetes/client-node';
import { LABEL_APP } from './labels.js';

export function applicationTokenSecret(secretName: string, appName: string, entry: { key: string; token: string }, owner: Omit<V1OwnerReference, 'controller'>): V1Secret {
  return {
    metadata: { name: secretName, labels: { [LABEL_APP]: appName }, ownerReferences: [{ ...owner, controller: false }] },
    type: 'Opaque',
    immutable: true,
    stringData: { [entry.key]: entry.token },
  };
}
