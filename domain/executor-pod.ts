// Executor pods that a Spark driver creates: sized from their application's executor
// config and allowed onto preemptible nodes. When logs are archived they carry the archive's
// finalizer as drivers do: Spark deletes its executors as it ends, and the controller keeps
// each one's log before it may go (cluster/kubernetes/log-archive.ts).
import type { V1Pod } from '@kubernetes/client-node';
import type { ApplicationConfig } from '../schemas/index.js';
import { archiveFinalizers } from './event-log.js';
import { ANNOTATION_ADMITTED, ANNOTATION_POLICY, RULES_VERSION } from './labels.js';
import { executorTolerations } from './placement.js';
import { parseMemoryMib } from './quantities.js';
import type { AdmissionRules } from './rules.js';
import { cpuQuantity, podMemoryMib } from './spark-properties.js';

export function renderExecutorPod(pod: V1Pod, config: ApplicationConfig, rules: AdmissionRules): V1Pod {
  const executor = config.executor ?? {};
  const spec = pod.spec ?? { containers: [] };
  const [main, ...rest] = spec.containers;
  const memory = executor.memory
    ? `${podMemoryMib(parseMemoryMib(executor.memory), rules.sizing.memoryOverheadFactor)}Mi`
    : main?.resources?.requests?.memory;
  const requests = { ...main?.resources?.requests, ...(executor.coreRequest ? { cpu: cpuQuantity(executor.coreRequest) } : {}), ...(memory ? { memory } : {}) };
  const limits = { ...main?.resources?.limits, ...(memory ? { memory } : {}) };
  return {
    ...pod,
    metadata: {
      ...pod.metadata,
      annotations: {
        ...pod.metadata?.annotations, [ANNOTATION_ADMITTED]: RULES_VERSION,
        ...(rules.policyVersion ? { [ANNOTATION_POLICY]: rules.policyVersion } : {}),
      },
      ...archiveFinalizers(pod.metadata?.finalizers, rules.archiveLogs),
    },
    spec: {
      ...spec,
      containers: main ? [{ ...main, resources: { requests, limits } }, ...rest] : [],
      tolerations: executorTolerations(rules, spec.tolerations),
    },
  };
}
