// How a Kubernetes attempt's driver pod and executors read as its end (cluster/kubernetes/attempt-end.ts):
// the platform's doing (evicted, node lost, deleted) apart from the application's (exit codes, OOM).
import type { V1Pod } from '@kubernetes/client-node';
import t from 'tap';
import { kubernetesAttemptEnd } from '../../cluster/kubernetes/attempt-end.js';

function pod(name: string, phase: string, terminated?: { exitCode: number; reason?: string }, extra: object = {}): V1Pod {
  const state = terminated ? { terminated: { ...terminated, finishedAt: new Date('2026-11-27T10:00:00Z') } } : { running: {} };
  return {
    metadata: { name },
    status: { phase, containerStatuses: [{ name: 'spark-kubernetes-driver', image: 'x', imageID: '', ready: false, restartCount: 0, state }], ...extra },
  } as V1Pod;
}
const live = (p: V1Pod) => ({ pod: p, deleted: false });

t.test('a driver still running (or pending) has not ended', async (t) => {
  t.equal(kubernetesAttemptEnd(live(pod('app', 'Running')), []), undefined);
  t.equal(kubernetesAttemptEnd(live(pod('app', 'Pending')), []), undefined);
});

t.test('the application own ends: completed, a user error (counted)', async (t) => {
  t.same(kubernetesAttemptEnd(live(pod('app', 'Succeeded', { exitCode: 0, reason: 'Completed' })), []), { reason: 'Completed', exitCode: 0, detail: 'exit code 0' });
  t.same(kubernetesAttemptEnd(live(pod('app', 'Failed', { exitCode: 1, reason: 'Error' })), []), { reason: 'Error', exitCode: 1, detail: 'exit code 1 (Error)' });
});

t.test('OOM: the driver OOMKilled (or Spark exit 52), else an executor that was', async (t) => {
  t.match(kubernetesAttemptEnd(live(pod('app', 'Failed', { exitCode: 137, reason: 'OOMKilled' })), []), { reason: 'OOMKilled', role: 'driver', exitCode: 137 });
  t.match(kubernetesAttemptEnd(live(pod('app', 'Failed', { exitCode: 52 })), []), { reason: 'OOMKilled', role: 'driver' });
  const executors = [pod('app-exec-1', 'Failed', { exitCode: 137, reason: 'OOMKilled' }), pod('app-exec-2', 'Running')];
  const end = kubernetesAttemptEnd(live(pod('app', 'Failed', { exitCode: 1, reason: 'Error' })), executors);
  t.match(end, { reason: 'OOMKilled', role: 'executor', exitCode: 1 });
  t.match(end?.detail, /executor app-exec-1 ran out of memory/);
  t.match(kubernetesAttemptEnd(live(pod('app', 'Succeeded', { exitCode: 0 })), executors), { reason: 'Completed' }, 'a run that completed despite a lost executor completed');
});

t.test('the platform own ends: evicted, node lost, deleted (not counted)', async (t) => {
  t.match(kubernetesAttemptEnd(live(pod('app', 'Failed', undefined, { reason: 'Evicted', message: 'The node was low on resource: memory.' })), []), { reason: 'Evicted', detail: /low on resource/ });
  const disrupted = (reason: string) => pod('app', 'Failed', { exitCode: 143, reason: 'Error' }, { conditions: [{ type: 'DisruptionTarget', status: 'True', reason }] });
  t.match(kubernetesAttemptEnd(live(disrupted('EvictionByEvictionAPI')), []), { reason: 'Evicted', exitCode: 143 });
  t.match(kubernetesAttemptEnd(live(disrupted('PreemptionByScheduler')), []), { reason: 'Evicted' });
  t.match(kubernetesAttemptEnd({ pod: disrupted('DeletionByTaintManager'), deleted: true }, []), { reason: 'NodeLost' });
  t.match(kubernetesAttemptEnd({ pod: pod('app', 'Running'), deleted: true }, []), { reason: 'DriverDeleted', detail: 'the driver pod was deleted' });
  t.match(kubernetesAttemptEnd({ pod: pod('app', 'Unknown'), deleted: true }, []), { reason: 'DriverDeleted' });
});
