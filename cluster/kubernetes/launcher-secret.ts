// A notebook kernel's launcher credential on Kubernetes (domain/launcher-credential.ts): the
// Secret that holds its one-time token, created by the API before the driver pod that mounts
// it: the first attempt's by the submission, a retry's by the controller (attempt-pods.ts).
import { applicationTokenSecret, LAUNCHER_SECRET_KEY } from '../../domain/index.js';
import { FIELD_MANAGER, type KubeClients } from './client.js';
import { kubeCall } from './errors.js';

export interface SecretOwner { apiVersion: string; kind: string; name: string; uid: string }

export interface LauncherSecret { appName: string; secretName: string; token: string; owner: SecretOwner }

/** The launcher's Secret, owned by its Application (not its controller: the Application's controller is ours, its pod's). */
export async function createLauncherSecret(clients: KubeClients, namespace: string, { appName, secretName, token, owner }: LauncherSecret): Promise<void> {
  await kubeCall(clients.server, `create the launcher Secret of ${appName}`, () => clients.core.createNamespacedSecret({
    namespace,
    fieldManager: FIELD_MANAGER,
    body: applicationTokenSecret(secretName, appName, { key: LAUNCHER_SECRET_KEY, token }, owner),
  }));
}
