// The API's side of retries (the status controller decides them: attempt-starter.ts): writing
// a later attempt's driver pod, admitted as a submission's is, with a retried kernel's own
// launcher credential (domain/launcher-credential.ts) in a Secret made just before it, and a
// Connect server's token (the first attempt's Secret: the token is the application's).
import type { V1Pod } from '@kubernetes/client-node';
import { retryLauncherCredential } from '../../domain/index.js';
import { ConflictError } from '../cluster.js';
import { FIELD_MANAGER, type KubeClients } from './client.js';
import { webhookRefusal } from './errors.js';
import type { ApiAdmission } from './expected-admission.js';
import { postJson } from './json-call.js';
import { createLauncherSecret } from './launcher-secret.js';
import { withConnectTokenSecret } from './connect-token-secret.js';

export interface AttemptPodDeps {
  clients: KubeClients;
  namespace: string;
  /** What the webhook would admit, when this process has its rules; undefined when unknown. */
  expectedAdmission(bare: V1Pod, dryRun: boolean): Promise<ApiAdmission | undefined>;
  /** The secret shared with the notebook gateway: a retried kernel's launcher token derives from it. Absent: no kernels here. */
  gatewaySecret?: string;
  /** The key of Connect servers' tokens (domain/connect-server-token.ts); absent: they get none. */
  connectTokenKey?: Buffer;
}

/**
 * A retry's driver pod (attempt-starter.ts), admitted as a submission's is: by this process
 * when it has the webhook's rules, else by the webhook. A conflict (the pod is there: another
 * replica made it) is the controller's to ignore. Resolves to admission's refusal, if any.
 */
export async function createAttemptPod(deps: AttemptPodDeps, bare: V1Pod): Promise<{ refused: string } | undefined> {
  const credential = retryLauncherCredential(bare, deps.gatewaySecret);
  const owner = bare.metadata?.ownerReferences?.[0];
  const pod = owner?.uid ? await withConnectTokenSecret(deps, credential?.pod ?? bare, owner.name, owner, true) : credential?.pod ?? bare;
  const admission = await deps.expectedAdmission(pod, false);
  if (admission?.outcome === 'refused') return { refused: admission.body.message };
  if (credential) await createAttemptSecret(deps, pod, credential.secretName, credential.token);
  const body = admission ? admission.admit(pod) : pod;
  try {
    await postJson<V1Pod>(deps.clients.kc, `/api/v1/namespaces/${deps.namespace}/pods?fieldManager=${FIELD_MANAGER}`, body);
  } catch (error) {
    const refusal = webhookRefusal(error);
    if (refusal) return { refused: refusal.body.message };
    throw error;
  }
  return undefined;
}

/**
 * The attempt's launcher Secret, owned by the Application as the first one is. There already:
 * another replica that led made it, with the same token (it derives from the attempt). The
 * earlier attempts' Secrets stay until the Application goes (the API may create Secrets, not
 * delete them): their tokens are spent, or refused once a later attempt's is taken (launcher-auth.ts).
 */
async function createAttemptSecret(deps: AttemptPodDeps, pod: V1Pod, secretName: string, token: string): Promise<void> {
  const owner = pod.metadata?.ownerReferences?.[0];
  const appName = owner?.name ?? pod.metadata!.name!;
  if (!owner?.uid) throw new Error(`the driver pod of ${pod.metadata?.name} has no owning Application: its launcher Secret would outlive it`);
  try {
    await createLauncherSecret(deps.clients, deps.namespace, { appName, secretName, token, owner });
  } catch (error) {
    if (!(error instanceof ConflictError)) throw error;
  }
}
