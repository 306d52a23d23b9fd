// The Spark properties of an application: its engineConf plus what the effective
// config implies, with the keys Spark's own cluster-mode submission writes.
import type { ApplicationConfig, PodConfig } from '../../schemas/index.js';
import { LABEL_APP, LABEL_JOB } from './labels.js';
import { parseMillicores } from './quantities.js';
import type { AdmissionRules } from './rules.js';

export interface AppIdentity {
  appName: string;
  jobName: string;
  namespace: string;
}

function podProperties(role: 'driver' | 'executor', pod: PodConfig): Record<string, string> {
  const props: Record<string, string> = {};
  if (pod.cores !== undefined) props[`spark.${role}.cores`] = String(pod.cores);
  if (pod.memory !== undefined) props[`spark.${role}.memory`] = pod.memory;
  if (pod.coreRequest !== undefined) props[`spark.kubernetes.${role}.request.cores`] = pod.coreRequest;
  if (pod.coreLimit !== undefined) props[`spark.kubernetes.${role}.limit.cores`] = pod.coreLimit;
  for (const [key, value] of Object.entries(pod.labels ?? {})) props[`spark.kubernetes.${role}.label.${key}`] = value;
  for (const [key, value] of Object.entries(pod.annotations ?? {})) props[`spark.kubernetes.${role}.annotation.${key}`] = value;
  return props;
}

export function sparkProperties(config: ApplicationConfig, id: AppIdentity, rules: AdmissionRules): Record<string, string> {
  const driver = config.driver ?? {};
  const executor = config.executor ?? {};
  const overhead = String(rules.sizing.memoryOverheadFactor);
  const props: Record<string, string> = {
    'spark.app.name': id.appName,
    'spark.kubernetes.namespace': id.namespace,
    'spark.kubernetes.driver.pod.name': id.appName,
    'spark.kubernetes.executor.podNamePrefix': id.appName,
    'spark.kubernetes.container.image': config.image ?? '',
    'spark.kubernetes.authenticate.driver.serviceAccountName': driver.serviceAccount ?? rules.serviceAccount,
    // Executors find the driver pod by its IP (no driver Service is needed).
    'spark.driver.host': '$(SPARK_DRIVER_BIND_ADDRESS)',
    'spark.driver.memoryOverheadFactor': overhead,
    'spark.executor.memoryOverheadFactor': overhead,
    'spark.kubernetes.memoryOverheadFactor': overhead, // the key before Spark 3.3
    ...podProperties('driver', driver),
    ...podProperties('executor', executor),
    [`spark.kubernetes.executor.label.${LABEL_APP}`]: id.appName,
    [`spark.kubernetes.executor.label.${LABEL_JOB}`]: id.jobName,
  };
  if (executor.instances !== undefined) props['spark.executor.instances'] = String(executor.instances);
  for (const secret of executor.secrets ?? []) props[`spark.kubernetes.executor.secrets.${secret.name}`] = secret.path;
  for (const [key, value] of Object.entries(executor.env ?? {})) props[`spark.executorEnv.${key}`] = value;
  if (config.type === 'Python' && config.pythonVersion) props['spark.kubernetes.pyspark.pythonVersion'] = config.pythonVersion;
  return { ...props, ...config.engineConf };
}

/** Pod memory request: Spark's memory plus its overhead (at least 384 MiB, as Spark does). */
export function podMemoryMib(memoryMib: number, factor: number): number {
  return memoryMib + Math.max(384, Math.floor(memoryMib * factor));
}

export const cpuQuantity = (coreRequest: string): string => `${parseMillicores(coreRequest)}m`;
