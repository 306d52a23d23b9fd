// The Spark properties of an application: its engineConf plus what the effective
// config implies, with the keys Spark's own cluster-mode submission writes.
import type { ApplicationConfig, PodConfig } from '../schemas/index.js';
import { driverAddress } from './driver-dns.js';
import { LABEL_APP, LABEL_JOB } from './labels.js';
import { parseMillicores } from './quantities.js';
import type { AdmissionRules } from './rules.js';

/** Spark's own name for the language (it sizes Python executors' extra memory from it). */
const RESOURCE_TYPES: Record<NonNullable<ApplicationConfig['type']>, string> = { Scala: 'java', Java: 'java', Python: 'python', R: 'r' };

export const DRIVER_PORTS = { rpc: 7078, blockManager: 7079, ui: 4040, connect: 15002 };

/** Where the dashboard proxies an application's Spark UI (dashboard/spark-ui-proxy.ts). */
export const sparkUiPath = (appName: string): string => `/dashboard/apps/${appName}/spark-ui`;

export interface AppIdentity {
  appName: string;
  jobName: string;
  namespace: string;
  /** The driver pod's name when it is not the appName (a retry's new attempt: domain/attempts.ts attemptPodName). */
  driverPod?: string;
}

/** Adds the properties of one pod's config (Object.assign-style: spreading large maps is slow in V8). */
function addPodProperties(props: Record<string, string>, role: 'driver' | 'executor', pod: PodConfig): void {
  if (pod.cores !== undefined) props[`spark.${role}.cores`] = String(pod.cores);
  if (pod.memory !== undefined) props[`spark.${role}.memory`] = pod.memory;
  if (pod.coreRequest !== undefined) props[`spark.kubernetes.${role}.request.cores`] = pod.coreRequest;
  if (pod.coreLimit !== undefined) props[`spark.kubernetes.${role}.limit.cores`] = pod.coreLimit;
  for (const key in pod.labels) props[`spark.kubernetes.${role}.label.${key}`] = pod.labels[key];
  for (const key in pod.annotations) props[`spark.kubernetes.${role}.annotation.${key}`] = pod.annotations[key];
}

export function sparkProperties(config: ApplicationConfig, id: AppIdentity, rules: AdmissionRules): Record<string, string> {
  const driver = config.driver ?? {};
  const executor = config.executor ?? {};
  const overhead = String(rules.sizing.memoryOverheadFactor);
  const props: Record<string, string> = {
    'spark.app.name': id.appName,
    'spark.kubernetes.namespace': id.namespace,
    'spark.kubernetes.driver.pod.name': id.driverPod ?? id.appName,
    'spark.kubernetes.executor.podNamePrefix': id.appName,
    'spark.kubernetes.container.image': config.image ?? '',
    'spark.kubernetes.authenticate.driver.serviceAccountName': driver.serviceAccount ?? rules.serviceAccount,
    // Executors find the driver by its name under the namespace's driver Service, else its IP.
    'spark.driver.host': driverAddress(id.driverPod ?? id.appName, id.namespace, rules.driverService).host,
    'spark.driver.memoryOverheadFactor': overhead,
    'spark.executor.memoryOverheadFactor': overhead,
    'spark.kubernetes.memoryOverheadFactor': overhead, // the key before Spark 3.3
    // The ports the pod declares; Spark would pick random ones in client mode.
    'spark.driver.port': String(DRIVER_PORTS.rpc),
    'spark.driver.blockManager.port': String(DRIVER_PORTS.blockManager),
    'spark.kubernetes.resource.type': RESOURCE_TYPES[config.type ?? 'Scala'],
    // The UI's links and redirects start with the dashboard's proxy path, so they stay under it.
    'spark.ui.proxyBase': sparkUiPath(id.appName),
  };
  addPodProperties(props, 'driver', driver);
  addPodProperties(props, 'executor', executor);
  props[`spark.kubernetes.executor.label.${LABEL_APP}`] = id.appName;
  props[`spark.kubernetes.executor.label.${LABEL_JOB}`] = id.jobName;
  if (executor.instances !== undefined) props['spark.executor.instances'] = String(executor.instances);
  for (const secret of executor.secrets ?? []) props[`spark.kubernetes.executor.secrets.${secret.name}`] = secret.path;
  for (const key in executor.env) props[`spark.executorEnv.${key}`] = executor.env[key];
  if (config.type === 'Python' && config.pythonVersion) props['spark.kubernetes.pyspark.pythonVersion'] = config.pythonVersion;
  return Object.assign(props, config.engineConf);
}

/** Pod memory request: Spark's memory plus its overhead (at least 384 MiB, as Spark does). */
export function podMemoryMib(memoryMib: number, factor: number): number {
  return memoryMib + Math.max(384, Math.floor(memoryMib * factor));
}

export const cpuQuantity = (coreRequest: string): string => `${parseMillicores(coreRequest)}m`;
