// The status controller's step that starts an application's next attempt (restartPolicy
// OnFailure; attempt-status.ts decided it and wrote PENDING with the attempt's number): after
// the retry interval, and only once every executor pod of the attempt before is gone (deleted
// here if Spark left any), it creates the new driver pod. Its name derives from the attempt
// (attemptPodName), so two replicas that both believe they lead cannot create two: the second
// create is refused as a conflict. A pod admission refuses (more memory than the policy allows)
// ends the application FAILED, as in local mode.
import type { V1Pod } from '@kubernetes/client-node';
import {
  ANNOTATION_OVERRIDES, applicationLabels, attemptPodName, bareDriverPod, LABEL_ATTEMPT, nextAttemptDue, retryPolicy,
} from '../../domain/index.js';
import type { ReconcileContext, ReconcileResult } from './controller.js';
import { nextAttemptOverrides } from './attempt-status.js';
import type { ApplicationResource, ApplicationStatus } from './records.js';

/** How long to look again while the executors of the attempt before are going. */
export const EXECUTORS_GONE_POLL_MS = 1_000;

/** What the step needs of the controller and the cluster (fakes in the unit tests). */
export interface AttemptStarterDeps {
  namespace: string;
  cache: {
    /** The application's executor pods that exist now (any attempt's). */
    executorsOf(appName: string): readonly V1Pod[];
    /** The executors of the attempt that ended are forgotten once the next starts. */
    forgetEndedExecutors(appName: string): void;
  };
  /** Creates the attempt's pod through admission; resolves to the refusal's message, else undefined (created, or there already). */
  createPod(bare: V1Pod, signal: AbortSignal): Promise<{ refused: string } | undefined>;
  deletePod(path: string, options: unknown, signal: AbortSignal): Promise<unknown>;
  putStatus(resource: ApplicationResource, status: ApplicationStatus, signal: AbortSignal): Promise<unknown>;
  /** The controller's guarded write (reconciler.ts): false when not written (not leading, a conflict). */
  write(kind: string, name: string, context: ReconcileContext, run: (signal: AbortSignal) => Promise<unknown>): Promise<unknown>;
  now?: () => number;
}

/** The bare driver pod of attempt `attempt`: the submission's intent with the retry's memory, owned by the Application. */
export function nextAttemptPod(resource: ApplicationResource, namespace: string, overrides: object): V1Pod {
  const { name, uid } = resource.metadata;
  const attempt = resource.status?.attempt ?? 1;
  const bare = bareDriverPod({
    appName: name, jobName: resource.spec.jobName, namespace, configTemplateName: resource.spec.configTemplateName || undefined,
    configOverrides: overrides, labels: applicationLabels(resource.metadata.labels), submittedBy: resource.spec.submittedBy ?? undefined,
  });
  const metadata = bare.metadata!;
  metadata.name = attemptPodName(name, attempt);
  metadata.labels![LABEL_ATTEMPT] = String(attempt);
  metadata.ownerReferences = [{ apiVersion: resource.apiVersion, kind: 'Application', name, uid: uid!, controller: true }];
  return bare;
}

/** The status when admission refused the next attempt's pod: FAILED, saying why. */
export function refusedAttemptStatus(status: ApplicationStatus, refused: string, now: string): ApplicationStatus {
  const attempt = status.attempt ?? 1;
  const detail = `attempt ${attempt} was refused by admission: ${refused}`;
  return {
    ...status, state: 'FAILED', stateDetail: detail, endedAt: now, attempt: attempt - 1,
    attempts: (status.attempts ?? []).filter((a) => a.attempt !== attempt),
    transitions: [...(status.transitions ?? []), { state: 'FAILED', at: now, detail }],
  };
}

/** One pass over an application that awaits its next attempt (attempt-status.ts awaitsNextAttempt). */
export async function startNextAttempt(deps: AttemptStarterDeps, resource: ApplicationResource, context: ReconcileContext): Promise<ReconcileResult> {
  const name = resource.metadata.name;
  const status = resource.status!;
  const attempt = status.attempt ?? 1;
  const now = deps.now ?? Date.now;
  const due = nextAttemptDue((status.attempts ?? []).filter((a) => a.attempt < attempt), retryPolicy(resource.spec.config));
  if (due > now()) return { requeueAfterMs: due - now() };
  const left = deps.cache.executorsOf(name);
  if (left.length > 0) {
    for (const pod of left.filter((p) => !p.metadata?.deletionTimestamp)) {
      await deps.write('executor', name, context, (signal) =>
        deps.deletePod(`/api/v1/namespaces/${deps.namespace}/pods/${pod.metadata!.name}`, { preconditions: { uid: pod.metadata?.uid } }, signal));
    }
    return { requeueAfterMs: EXECUTORS_GONE_POLL_MS };
  }
  const overrides = nextAttemptOverrides(resource, resource.metadata.annotations?.[ANNOTATION_OVERRIDES]);
  let refused: string | undefined;
  const created = await deps.write('attempt', name, context, async (signal) => {
    refused = (await deps.createPod(nextAttemptPod(resource, deps.namespace, overrides), signal))?.refused;
    return true;
  });
  if (!created) return undefined;
  deps.cache.forgetEndedExecutors(name);
  if (refused !== undefined) {
    const failed = refusedAttemptStatus(status, refused, new Date(now()).toISOString());
    await deps.write('status', name, context, (signal) => deps.putStatus(resource, failed, signal));
  }
  return undefined;
}
