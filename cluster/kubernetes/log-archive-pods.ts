// What the log-archive controller (log-archiver.ts) reads off a pod, as pure predicates kept
// apart from its reconcile loop: whether the pod still holds the archive's finalizer, has ended,
// runs or ever ran (so has a log), and which executor it is.
import type { V1Pod } from '@kubernetes/client-node';
import { LOG_ARCHIVE_FINALIZER } from '../../domain/index.js';

export const hasFinalizer = (pod: V1Pod) => pod.metadata?.finalizers?.includes(LOG_ARCHIVE_FINALIZER) ?? false;

/** The pod has ended (its phase says so, or it is being deleted and no container runs). */
export function ended(pod: V1Pod): boolean {
  const phase = pod.status?.phase;
  if (phase === 'Succeeded' || phase === 'Failed') return true;
  if (!pod.metadata?.deletionTimestamp) return false;
  return !(pod.status?.containerStatuses ?? []).some((c) => c.state?.running);
}

/** Whether a container of the pod runs now (its log can be followed). */
export const runs = (pod: V1Pod) => (pod.status?.containerStatuses ?? []).some((c) => c.state?.running);

/** Whether a container of the pod ever started (else there is no log to keep). */
export const everRan = (pod: V1Pod) => (pod.status?.containerStatuses ?? []).some((c) => c.state?.running || c.state?.terminated || c.lastState?.terminated);

export const executorId = (pod: V1Pod): number | undefined => {
  const id = pod.metadata?.labels?.['spark-exec-id'];
  return id && /^[1-9][0-9]{0,5}$/.test(id) ? Number(id) : undefined;
};
