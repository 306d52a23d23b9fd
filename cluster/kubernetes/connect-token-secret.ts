// A Spark Connect server's own token on Kubernetes (domain/connect-server-token.ts): the Secret
// that holds it, created by the API before the driver pod that names it in its env, owned by the
// Application (the garbage collector removes it with it). Create only, as the launcher's: the
// service never reads a Secret back (it derives the token again when it needs it).
import { type V1OwnerReference, type V1Pod } from '@kubernetes/client-node';
import { connectServerToken, connectTokenSecret, connectTokenSecretName, runsConnectServer, withConnectServerToken } from '../../domain/index.js';
import { ConflictError } from '../cluster.js';
import { FIELD_MANAGER, type KubeClients } from './client.js';
import { kubeCall } from './errors.js';

export interface ConnectTokenDeps {
  clients: KubeClients;
  namespace: string;
  /** The servers' token key (connectTokenKey of the api replicas' shared secret); absent: servers get no token. */
  connectTokenKey?: Buffer;
}

type Owner = Omit<V1OwnerReference, 'controller'>;

/**
 * The bare pod of application `appName`, with its server's token when it runs Spark's Connect
 * server (and the key is known), once the Secret that holds it exists. `again`: a later attempt's
 * pod, whose Secret the first attempt made (there already: no error).
 */
export async function withConnectTokenSecret(deps: ConnectTokenDeps, bare: V1Pod, appName: string, owner: Owner, again = false): Promise<V1Pod> {
  if (!deps.connectTokenKey || !runsConnectServer(bare)) return bare;
  const body = connectTokenSecret(appName, connectServerToken(deps.connectTokenKey, appName), owner);
  try {
    await kubeCall(deps.clients.server, `create the Spark Connect token Secret of ${appName}`, () =>
      deps.clients.core.createNamespacedSecret({ namespace: deps.namespace, fieldManager: FIELD_MANAGER, body }));
  } catch (error) {
    if (!(again && error instanceof ConflictError)) throw error;
  }
  return withConnectServerToken(bare, connectTokenSecretName(appName));
}
