// The driver pod: the bare pod the API writes, and the admitted pod that admission
// renders from the effective config (what Spark's cluster-mode submission would write).
import type { V1Container, V1EnvVar, V1Pod, V1PodSpec, V1Volume, V1VolumeMount } from '@kubernetes/client-node';
import type { ApplicationConfig, SecretMount } from '../schemas/index.js';
import { keyFilePath } from './defaults.js';
import { type DriverAddress, driverAddress } from './driver-dns.js';
import { archiveFinalizers, driverEventLogDir, eventLogEnv } from './event-log.js';
import {
  ANNOTATION_ADMITTED, ANNOTATION_POLICY, ANNOTATION_CONFIG, ANNOTATION_DRIVER_ADDRESS, ANNOTATION_SIZING, ANNOTATION_OVERRIDES, ANNOTATION_SUBMITTED_BY, DRIVER_CONTAINER, LABEL_APP, LABEL_JOB,
  LABEL_TEMPLATE, RULES_VERSION, SPARK_ROLE,
} from './labels.js';
import { placeDriver } from './placement.js';
import { sizingAnnotation } from './sizing-annotation.js';
import type { HistoryDecision } from './history-sizing.js';
import { parseMemoryMib } from './quantities.js';
import type { AdmissionRules } from './rules.js';
import { engineMajor } from './engine-versions.js';
import { type AppIdentity, cpuQuantity, DRIVER_PORTS, podMemoryMib, sparkProperties } from './spark-properties.js';

export interface BarePodInput {
  appName: string;
  jobName: string;
  namespace: string;
  configTemplateName?: string;
  configOverrides?: ApplicationConfig;
  /** The application's own labels (never reserved keys: the schema refuses them). */
  labels?: Record<string, string>;
  /** The submitting key's id, kept on the pod (and so in the record). */
  submittedBy?: string;
}

/** What the API writes: identity and intent only; admission fills in the rest. */
export function bareDriverPod(input: BarePodInput): V1Pod {
  const labels: Record<string, string> = Object.assign({}, input.labels);
  labels[LABEL_JOB] = input.jobName;
  labels[LABEL_APP] = input.appName;
  labels[SPARK_ROLE] = 'driver';
  if (input.configTemplateName) labels[LABEL_TEMPLATE] = input.configTemplateName;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: input.appName,
      namespace: input.namespace,
      labels,
      annotations: input.submittedBy === undefined
        ? { [ANNOTATION_OVERRIDES]: JSON.stringify(input.configOverrides ?? {}) }
        : { [ANNOTATION_OVERRIDES]: JSON.stringify(input.configOverrides ?? {}), [ANNOTATION_SUBMITTED_BY]: input.submittedBy },
    },
    // No image on purpose: a pod that missed admission fails validation loudly.
    spec: { restartPolicy: 'Never', containers: [{ name: DRIVER_CONTAINER } as V1Container] },
  };
}

export const SPARK_LOCAL_DIR = '/var/data/spark-local';

/**
 * A config's pod annotations without the service's own keys (submission-service/…): the
 * submitter's key id, the overrides, the idempotency mark come from the submission, never from
 * a template or an override that would name another key as the submitter.
 */
function ownAnnotations(annotations: Record<string, string> | undefined): Record<string, string> {
  const own: Record<string, string> = {};
  for (const key in annotations) if (!key.startsWith('submission-service/')) own[key] = annotations[key];
  return own;
}

/** Container arguments for the image's entrypoint (`driver` runs spark-submit in client mode). */
export function driverArgs(config: ApplicationConfig, props: Record<string, string>, master: string): string[] {
  const args = ['driver', '--master', master];
  for (const [key, value] of Object.entries(props)) args.push('--conf', `${key}=${value}`);
  if (config.mainClass) args.push('--class', config.mainClass);
  args.push(config.mainApplicationFile ?? 'spark-internal', ...(config.arguments ?? []));
  return args;
}

const secretVolumeName = (secret: SecretMount) => `secret-${secret.name}`.slice(0, 63).replace(/[^a-z0-9-]/g, '-');

function driverEnv(config: ApplicationConfig): V1EnvVar[] {
  const env: V1EnvVar[] = [
    { name: 'SPARK_DRIVER_BIND_ADDRESS', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'status.podIP' } } },
    { name: 'SPARK_LOCAL_DIRS', value: SPARK_LOCAL_DIR },
  ];
  const cloud = (config.driver?.secrets ?? []).find((s) => s.secretType === 'CloudServiceAccount');
  if (cloud) env.push({ name: 'GOOGLE_APPLICATION_CREDENTIALS', value: keyFilePath(cloud) });
  for (const [name, value] of Object.entries(config.driver?.env ?? {})) env.push({ name, value });
  return env;
}

function driverVolumes(config: ApplicationConfig): { volumes: V1Volume[]; mounts: V1VolumeMount[] } {
  const volumes: V1Volume[] = [{ name: 'spark-local-dir-1', emptyDir: {} }];
  const mounts: V1VolumeMount[] = [{ name: 'spark-local-dir-1', mountPath: SPARK_LOCAL_DIR }];
  for (const secret of config.driver?.secrets ?? []) {
    const name = secretVolumeName(secret);
    volumes.push({ name, secret: { secretName: secret.name } });
    mounts.push({ name, mountPath: secret.path, readOnly: true });
  }
  return { volumes, mounts };
}

/**
 * The pod's hostname and subdomain under the drivers' Service. A pod that cannot have its name
 * there loses a subdomain naming that Service: it must not publish a name that is not its own.
 */
function withDriverDns(spec: V1PodSpec, address: DriverAddress, rules: AdmissionRules): V1PodSpec {
  if (address.pod) return { ...spec, ...address.pod };
  if (!rules.driverService || spec.subdomain !== rules.driverService) return spec;
  const { hostname: _hostname, subdomain: _subdomain, ...rest } = spec;
  return rest;
}

/**
 * Our env, then the pod's own. A variable the pod sets itself leaves ours out: it won anyway
 * (the later of two equal names wins), and so rendering an admitted pod again (the API writes
 * admitted pods; a webhook that still sees one renders it once more) adds nothing.
 */
function mergeEnv(ours: V1EnvVar[], own: V1EnvVar[] | undefined): V1EnvVar[] {
  if (!own || own.length === 0) return ours;
  return [...ours.filter((e) => !own.some((o) => o.name === e.name)), ...own];
}

/**
 * Renders the admitted driver pod from a bare (or team-written) pod and the effective config.
 * Rendering an admitted pod again gives the same pod: its env merges by name (mergeEnv), and a
 * volume or mount of the pod's with the name or path of one of ours gives way to ours (two
 * with one name or path would be refused by validation anyway).
 */
/** `history`: sizing from the job's past runs, when it had something to say (history-sizing.ts). */
export function renderDriverPod(pod: V1Pod, config: ApplicationConfig, id: AppIdentity, rules: AdmissionRules, history?: HistoryDecision): V1Pod {
  const driver = config.driver ?? {};
  const props = sparkProperties(config, id, rules);
  const eventLogDir = driverEventLogDir(rules.eventLog, props, id.appName);
  if (eventLogDir !== undefined) props['spark.eventLog.dir'] = eventLogDir;
  const memory = `${podMemoryMib(parseMemoryMib(driver.memory ?? '1g'), rules.sizing.memoryOverheadFactor)}Mi`;
  const { volumes, mounts } = driverVolumes(config);
  const spec = pod.spec ?? { containers: [] };
  const original = spec.containers.find((c) => c.name === DRIVER_CONTAINER) ?? spec.containers[0];
  const container: V1Container = {
    ...original,
    name: original?.name ?? DRIVER_CONTAINER,
    image: config.image,
    args: driverArgs(config, props, rules.master),
    env: mergeEnv([...driverEnv(config), ...eventLogEnv(rules.eventLog, config.engineConf, id.appName)], original?.env),
    ports: [
      { name: 'driver-rpc-port', containerPort: DRIVER_PORTS.rpc, protocol: 'TCP' },
      { name: 'blockmanager', containerPort: DRIVER_PORTS.blockManager, protocol: 'TCP' },
      { name: 'spark-ui', containerPort: DRIVER_PORTS.ui, protocol: 'TCP' },
      // Spark 4's submission client declares its Connect server's port on every driver (docs/driver-pod-parity.md).
      ...(engineMajor(config.engineVersion ?? '') >= 4 ? [{ name: 'spark-connect', containerPort: DRIVER_PORTS.connect, protocol: 'TCP' }] : []),
    ],
    resources: {
      requests: { cpu: cpuQuantity(driver.coreRequest ?? '1'), memory },
      limits: { memory, ...(driver.coreLimit ? { cpu: cpuQuantity(driver.coreLimit) } : {}) },
    },
    volumeMounts: [...mounts, ...(original?.volumeMounts ?? []).filter((m) => !mounts.some((ours) => ours.mountPath === m.mountPath))],
  };
  // Object.assign, not spreads with computed keys: V8 turns those into slow dictionary objects.
  const labels: Record<string, string> = Object.assign({}, pod.metadata?.labels, driver.labels);
  labels[LABEL_APP] = id.appName;
  labels[LABEL_JOB] = id.jobName;
  labels[SPARK_ROLE] = 'driver';
  const annotations: Record<string, string> = Object.assign({}, pod.metadata?.annotations, ownAnnotations(driver.annotations));
  annotations[ANNOTATION_CONFIG] = JSON.stringify(config);
  annotations[ANNOTATION_ADMITTED] = RULES_VERSION;
  if (rules.policyVersion) annotations[ANNOTATION_POLICY] = rules.policyVersion;
  annotations[ANNOTATION_SIZING] = sizingAnnotation(config, rules, history);
  const address = driverAddress(id.driverPod ?? id.appName, id.namespace, rules.driverService);
  if (address.fallback) annotations[ANNOTATION_DRIVER_ADDRESS] = address.fallback;
  return {
    ...pod,
    metadata: { ...pod.metadata, name: id.driverPod ?? id.appName, labels, annotations, ...archiveFinalizers(pod.metadata?.finalizers, rules.archiveLogs) },
    spec: {
      ...withDriverDns(spec, address, rules),
      serviceAccountName: driver.serviceAccount,
      // Never, whatever restartPolicy says: a failed run is retried as a new attempt with a new
      // driver pod (domain/attempts.ts), never by the kubelet restarting the driver beside the
      // executors of the try that failed.
      restartPolicy: 'Never',
      containers: [container, ...spec.containers.filter((c) => c !== original)],
      volumes: [...volumes, ...(spec.volumes ?? []).filter((v) => !volumes.some((ours) => ours.name === v.name))],
      ...placeDriver(rules),
    },
  };
}
