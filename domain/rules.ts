// Everything admission decides from besides the pod: node pools, sizing tunables,
// images, placement. Built once from configuration; admission itself stays pure.
import type { NodePool, SizingRules } from '../schemas/index.js';
import { resolveEngineVersions } from './engine-versions.js';
import type { EventLogRules } from './event-log.js';
import { buildPolicy, type SubmissionPolicy } from './policy.js';

/** A node pool with its schedulable maxima known (given, or derived by SPEC's rule 5). */
export interface ResolvedPool extends Required<NodePool> {
  maxCoreMillicores: number;
}

export interface PlacementRules {
  /** Node label holding the pool's instance name. */
  instanceTypeLabel: string;
  /** Node label that marks preemptible (spot) nodes, with its value there. */
  preemptibleLabel: { key: string; value: string };
  /** Taints preemptible nodes carry; executors tolerate them, drivers do not. */
  preemptibleTaints: { key: string; value?: string; effect: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute' }[];
}

export interface AdmissionRules {
  pools: ResolvedPool[]; // smallest first
  sizing: Required<SizingRules>;
  namespace: string;
  serviceAccount: string;
  defaultEngineVersion: string;
  /** The Spark versions submissions may name (engine-versions.ts); the default is one of them. */
  engineVersions: string[];
  /** Image per engineVersion; `{version}` in `imagePattern` serves the others. */
  images: Record<string, string>;
  imagePattern: string;
  /** Spark master the driver in the pod talks to. */
  master: string;
  placement: PlacementRules;
  /** What submissions may ask for and who may act on an application (policy.ts). */
  policy: SubmissionPolicy;
  /** Event logs for every application (event-log.ts); absent: Spark's default (none). */
  eventLog?: EventLogRules;
  /** Whether driver pods wait for the controller to archive their logs (LOG_ARCHIVE_FINALIZER). */
  archiveLogs?: boolean;
  /**
   * The namespace's headless Service of all drivers (driver-dns.ts): executors reach a driver
   * by `<appName>.<driverService>.<namespace>.svc`. Absent: by the driver pod's IP.
   */
  driverService?: string;
  /** The content hash of the file these rules came from (ANNOTATION_POLICY); absent for rules made in code. */
  policyVersion?: string;
}

export const defaultSizing: Required<SizingRules> = {
  defaultDriverCores: 1,
  defaultDriverCoreRequestReserveMillicores: 140,
  memoryOverheadFactor: 0.4,
  nonAllocatableCpuFraction: 0.15,
  nonAllocatableMemoryFraction: 0.25,
};

/** Placement presets for common clouds (see README, "Placement"). */
export const placementPresets: Record<string, PlacementRules> = {
  generic: {
    instanceTypeLabel: 'node.kubernetes.io/instance-type',
    preemptibleLabel: { key: 'submission-service/preemptible', value: 'true' },
    preemptibleTaints: [{ key: 'submission-service/preemptible', value: 'true', effect: 'NoSchedule' }],
  },
  gke: {
    instanceTypeLabel: 'node.kubernetes.io/instance-type',
    preemptibleLabel: { key: 'cloud.google.com/gke-spot', value: 'true' },
    preemptibleTaints: [{ key: 'cloud.google.com/gke-spot', value: 'true', effect: 'NoSchedule' }],
  },
  eks: {
    instanceTypeLabel: 'node.kubernetes.io/instance-type',
    preemptibleLabel: { key: 'eks.amazonaws.com/capacityType', value: 'SPOT' },
    preemptibleTaints: [{ key: 'eks.amazonaws.com/capacityType', value: 'SPOT', effect: 'NoSchedule' }],
  },
};

/** Fills a pool's schedulable maxima from rule 5 when the file does not give them. */
export function resolvePool(pool: NodePool, sizing: Required<SizingRules>): ResolvedPool {
  const maxCores = pool.maximumSchedulableCoreRequest
    ?? Math.floor(pool.cpu * (1 - sizing.nonAllocatableCpuFraction) * 1000) / 1000;
  const maxMemory = pool.maximumSchedulableMemoryRequestMib
    ?? Math.floor((pool.memoryMib * (1 - sizing.nonAllocatableMemoryFraction)) / (1 + sizing.memoryOverheadFactor));
  return {
    cloudProvider: pool.cloudProvider,
    cpu: pool.cpu,
    instanceName: pool.instanceName,
    maximumSchedulableCoreRequest: maxCores,
    maximumSchedulableMemoryRequestMib: maxMemory,
    memoryMib: pool.memoryMib,
    preemptible: pool.preemptible,
    maxCoreMillicores: Math.round(maxCores * 1000),
  };
}

export interface RulesOptions {
  nodePools: NodePool[];
  sizing?: SizingRules;
  namespace?: string;
  serviceAccount?: string;
  defaultEngineVersion?: string;
  /** Offered Spark versions; default DEFAULT_ENGINE_VERSIONS. */
  engineVersions?: string[];
  images?: Record<string, string>;
  imagePattern?: string;
  master?: string;
  placement?: PlacementRules | keyof typeof placementPresets;
  policy?: Partial<SubmissionPolicy>;
  /** Event log directory for every application; the rolling file size defaults to 128m. */
  eventLog?: { dir: string; rollingMaxFileSize?: string; s3?: EventLogRules['s3'] };
  archiveLogs?: boolean;
  driverService?: string;
  policyVersion?: string;
}

export function buildRules(options: RulesOptions): AdmissionRules {
  if (options.nodePools.length === 0) throw new Error('at least one node pool is needed');
  const sizing = { ...defaultSizing, ...options.sizing };
  const pools = options.nodePools
    .map((pool) => resolvePool(pool, sizing))
    .sort((a, b) => a.cpu - b.cpu || a.memoryMib - b.memoryMib);
  const placement = typeof options.placement === 'object'
    ? options.placement
    : placementPresets[options.placement ?? 'generic'];
  if (!placement) throw new Error(`unknown placement preset ${String(options.placement)}`);
  const versions = resolveEngineVersions(options.engineVersions, options.defaultEngineVersion);
  return {
    pools,
    sizing,
    namespace: options.namespace ?? 'spark-apps',
    serviceAccount: options.serviceAccount ?? 'spark-driver',
    defaultEngineVersion: versions.defaultVersion,
    engineVersions: versions.offered,
    images: options.images ?? {},
    imagePattern: options.imagePattern ?? 'apache/spark:{version}',
    master: options.master ?? 'k8s://https://kubernetes.default.svc',
    placement,
    policy: buildPolicy(options.policy),
    ...(options.eventLog ? { eventLog: { rollingMaxFileSize: '128m', ...options.eventLog } } : {}),
    ...(options.archiveLogs ? { archiveLogs: true } : {}),
    ...(options.driverService ? { driverService: options.driverService } : {}),
    ...(options.policyVersion ? { policyVersion: options.policyVersion } : {}),
  };
}
