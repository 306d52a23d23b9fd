// Kubernetes' side of retries (domain/attempts.ts decides): how an attempt's driver pod, and
// the executor pods it had, read as the attempt's end. Pure, for the controller: the pod's
// phase and reason, its container's termination, and the disruption condition the control
// plane writes before it removes a pod (Kubernetes 1.26+) tell the application's own failure
// from the platform's doing.
import type { V1Pod } from '@kubernetes/client-node';
import { type AttemptEnd, SPARK_OOM_EXIT_CODE } from '../../domain/index.js';

/** What the controller knows of the driver pod: the live pod, or the last state of one that was deleted. */
export interface DriverView { pod: V1Pod; deleted: boolean }

/** DisruptionTarget reasons that mean the node went away, not the application. */
const NODE_LOST_REASONS = new Set(['DeletionByTaintManager', 'DeletionByPodGC', 'NodeLost']);
/** DisruptionTarget reasons that mean the pod was evicted or preempted to make room. */
const EVICTED_REASONS = new Set(['EvictionByEvictionAPI', 'PreemptionByScheduler', 'TerminationByKubelet', 'Evicted']);

const terminated = (pod: V1Pod) => pod.status?.containerStatuses?.[0]?.state?.terminated;

/** Why the control plane removed the pod, if it did (status.reason, else the DisruptionTarget condition). */
function disruption(pod: V1Pod): 'Evicted' | 'NodeLost' | undefined {
  const reasons = [pod.status?.reason, ...(pod.status?.conditions ?? []).filter((c) => c.type === 'DisruptionTarget' && c.status === 'True').map((c) => c.reason)];
  if (reasons.some((r) => r !== undefined && NODE_LOST_REASONS.has(r))) return 'NodeLost';
  if (reasons.some((r) => r !== undefined && EVICTED_REASONS.has(r))) return 'Evicted';
  return undefined;
}

/** An executor pod that ran out of memory: the kernel's OOM kill, or Spark's out-of-memory exit. */
function outOfMemory(pod: V1Pod): boolean {
  const end = terminated(pod);
  return end?.reason === 'OOMKilled' || end?.exitCode === SPARK_OOM_EXIT_CODE;
}

/**
 * The attempt's end, or undefined while its driver has not ended. `executors`: the attempt's
 * executor pods as last seen (an executor killed for memory makes the driver fail with an
 * ordinary exit code: the executors say why). A user's stop is not read here: the controller knows
 * it from the Application, and never retries it.
 */
export function kubernetesAttemptEnd(view: DriverView, executors: readonly V1Pod[]): AttemptEnd | undefined {
  const { pod } = view;
  const phase = pod.status?.phase;
  const end = terminated(pod);
  const exitCode = end?.exitCode ?? null;
  const removed = disruption(pod);
  if (removed === 'Evicted') return { reason: 'Evicted', exitCode, detail: `the driver pod was evicted${pod.status?.message ? `: ${pod.status.message}` : ''}` };
  if (removed === 'NodeLost') return { reason: 'NodeLost', exitCode, detail: "the driver pod's node was lost" };
  if (phase === 'Succeeded') return { reason: 'Completed', exitCode: exitCode ?? 0, detail: `exit code ${exitCode ?? 0}` };
  if (phase === 'Failed') {
    const detail = end ? `exit code ${end.exitCode}${end.reason ? ` (${end.reason})` : ''}` : pod.status?.reason ?? 'the driver pod failed';
    if (end?.reason === 'OOMKilled' || exitCode === SPARK_OOM_EXIT_CODE) return { reason: 'OOMKilled', exitCode, role: 'driver', detail };
    const oom = executors.filter(outOfMemory).map((p) => p.metadata?.name);
    if (oom.length > 0) return { reason: 'OOMKilled', exitCode, role: 'executor', detail: `${detail}; executor ${oom.join(', ')} ran out of memory` };
    return { reason: 'Error', exitCode, detail };
  }
  if (view.deleted) return { reason: 'DriverDeleted', exitCode, detail: 'the driver pod was deleted' };
  return undefined;
}
