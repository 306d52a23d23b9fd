// The API's side of retries (the status controller decides them: attempt-starter.ts): writing
// a later attempt's driver pod, admitted as a submission's is.
import type { V1Pod } from '@kubernetes/client-node';
import { FIELD_MANAGER, type KubeClients } from './client.js';
import { webhookRefusal } from './errors.js';
import type { admissionWithTemplate } from './expected-admission.js';
import { postJson } from './json-call.js';

export interface AttemptPodDeps {
  clients: KubeClients;
  namespace: string;
  /** What the webhook would admit, when this process has its rules; undefined when unknown. */
  expectedAdmission(bare: V1Pod, dryRun: boolean): ReturnType<typeof admissionWithTemplate>;
}

/**
 * A retry's driver pod (attempt-starter.ts), admitted as a submission's is: by this process
 * when it has the webhook's rules, else by the webhook. A conflict (the pod is there: another
 * replica made it) is the controller's to ignore. Resolves to admission's refusal, if any.
 */
export async function createAttemptPod(deps: AttemptPodDeps, bare: V1Pod): Promise<{ refused: string } | undefined> {
  const admission = await deps.expectedAdmission(bare, false);
  if (admission?.outcome === 'refused') return { refused: admission.body.message };
  const body = admission ? admission.admit(bare) : bare;
  try {
    await postJson<V1Pod>(deps.clients.kc, `/api/v1/namespaces/${deps.namespace}/pods?fieldManager=${FIELD_MANAGER}`, body);
  } catch (error) {
    const refusal = webhookRefusal(error);
    if (refusal) return { refused: refusal.body.message };
    throw error;
  }
  return undefined;
}
