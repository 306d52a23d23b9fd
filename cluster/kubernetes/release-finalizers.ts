// The finalizer's uninstall path. Admission puts LOG_ARCHIVE_FINALIZER on every driver and
// executor pod and the leader's log-archive controller (log-archiver.ts) removes it once the
// log is kept; with the service uninstalled no controller is left, and a pod deleted then
// (Spark deletes its executors as it ends, a user deletes a driver) would stay Terminating for
// ever. So the chart's pre-delete hook (templates/uninstall-hook.yaml) runs
// `submission-service release-finalizers`, which takes our finalizer off every pod of the
// applications namespace, running or not: their logs are no longer archived, and they go
// when deleted. Other finalizers are left alone. Operators can run it by hand too.
import type { CoreV1Api, V1Pod } from '@kubernetes/client-node';
import { LOG_ARCHIVE_FINALIZER } from '../../domain/index.js';

/** The JSON patch that removes our finalizer from a pod as read, or undefined when it has none. */
export function finalizerRemoval(pod: V1Pod): { op: string; path: string; value?: string }[] | undefined {
  const index = pod.metadata?.finalizers?.indexOf(LOG_ARCHIVE_FINALIZER) ?? -1;
  if (index < 0) return undefined;
  // The test fails (422) if the list changed since it was read: the next round reads it again.
  return [
    { op: 'test', path: `/metadata/finalizers/${index}`, value: LOG_ARCHIVE_FINALIZER },
    { op: 'remove', path: `/metadata/finalizers/${index}` },
  ];
}

/** Takes our finalizer off every pod of `namespace` that holds it; resolves to how many. Retries changed pods a few times. */
export async function releaseLogFinalizers(core: Pick<CoreV1Api, 'listNamespacedPod' | 'patchNamespacedPod'>, namespace: string, log: (message: string) => void = () => undefined): Promise<number> {
  let released = 0;
  for (let round = 0; round < 5; round++) {
    let changed = 0;
    let left = 0;
    let _continue: string | undefined;
    do {
      const page = await core.listNamespacedPod({ namespace, limit: 500, _continue });
      for (const pod of page.items) {
        const body = finalizerRemoval(pod);
        if (!body) continue;
        try {
          await core.patchNamespacedPod({ name: pod.metadata!.name!, namespace, body });
          released++;
        } catch (error) {
          const code = (error as { code?: number }).code;
          if (code === 404) continue; // gone meanwhile
          if (code !== 422) throw error;
          changed++; // its finalizers changed since the list: read again
        }
      }
      left += changed;
      _continue = page.metadata?._continue;
    } while (_continue);
    if (left === 0) break;
    log(`release-finalizers: ${left} pods changed while being released; reading them again`);
  }
  return released;
}
