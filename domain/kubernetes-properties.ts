// Which `spark.kubernetes.*` properties a submission's engineConf may set. Spark turns these
// into the pods it builds: `spark.kubernetes.executor.secrets.*` mounts a Secret,
// `spark.kubernetes.authenticate.executor.serviceAccountName` picks the executors' identity,
// `spark.kubernetes.executor.volumes.hostPath.*` mounts the node's disk. So the family is
// closed: only tuning that changes no pod's identity, mounts, image, placement or size passes.
// What the service itself decides (namespace, names, image, service accounts, secrets,
// volumes, labels, annotations, node selectors, resources, pod templates) comes from the
// config and its template, never from these keys. Templates (admins) are not checked here.

/** Allowed by name: allocation pacing, polling, executor cleanup and rolling, client timeouts. */
export const ALLOWED_KUBERNETES_PROPERTIES: readonly string[] = [
  'spark.kubernetes.allocation.batch.size',
  'spark.kubernetes.allocation.batch.delay',
  'spark.kubernetes.allocation.executor.timeout',
  'spark.kubernetes.allocation.maxPendingPods',
  'spark.kubernetes.allocation.driver.readinessTimeout',
  'spark.kubernetes.executor.apiPollingInterval',
  'spark.kubernetes.executor.eventProcessingInterval',
  'spark.kubernetes.executor.enablePollingWithResourceVersion',
  'spark.kubernetes.executor.missingPodDetectDelta',
  'spark.kubernetes.executor.checkAllContainers',
  'spark.kubernetes.executor.deleteOnTermination',
  'spark.kubernetes.executor.rollInterval',
  'spark.kubernetes.executor.rollPolicy',
  'spark.kubernetes.executor.minTasksPerExecutorBeforeRolling',
  'spark.kubernetes.dynamicAllocation.deleteGracePeriod',
  'spark.kubernetes.driver.connectionTimeout',
  'spark.kubernetes.driver.requestTimeout',
  'spark.kubernetes.submission.connectionTimeout',
  'spark.kubernetes.submission.requestTimeout',
  'spark.kubernetes.submission.waitAppCompletion',
  'spark.kubernetes.report.interval',
  'spark.kubernetes.appKillPodDeletionGracePeriod',
  'spark.kubernetes.pyspark.pythonVersion',
];

/** Allowed families: the driver's environment (its names pass the environment rules of policy.ts). */
export const ALLOWED_KUBERNETES_PREFIXES: readonly string[] = ['spark.kubernetes.driverEnv.'];

/** `spark.kubernetes.x` matches itself; `spark.kubernetes.x.*` matches every key below it. */
const matches = (key: string, pattern: string) =>
  pattern.endsWith('.*') ? key.startsWith(pattern.slice(0, -1)) : key === pattern;

/**
 * Whether a submission may set `key` in engineConf. Keys outside `spark.kubernetes.` are not
 * this rule's business; `extra` is the policy's own list (`policy.kubernetesProperties`).
 */
export function kubernetesPropertyAllowed(key: string, extra: readonly string[] = []): boolean {
  if (!key.startsWith('spark.kubernetes.')) return true;
  return ALLOWED_KUBERNETES_PROPERTIES.includes(key)
    || ALLOWED_KUBERNETES_PREFIXES.some((prefix) => key.startsWith(prefix))
    || extra.some((pattern) => matches(key, pattern));
}
