// Admission rules from the command line and a node-pool file (which may also carry
// sizing, placement, images: the same keys as the Helm chart's values).
import type { NodePoolsFile } from '../schemas/index.js';
import { buildRules, type AdmissionRules, type PlacementRules, type RulesOptions, type SubmissionPolicy } from '../domain/index.js';
import { readNodePools, thisMachinePool } from './config.js';

interface ServiceConfigFile {
  placement?: PlacementRules | string;
  images?: Record<string, string>;
  imagePattern?: string;
  defaultEngineVersion?: string;
  /** The Spark versions submissions may name (domain/engine-versions.ts); absent: 3.5.7 and 4.2.0. */
  engineVersions?: string[];
  serviceAccount?: string;
  /** The applications namespace's headless Service of all drivers (driver-dns.ts); absent: pod IPs. */
  driverService?: string;
  /** Allowlists for submissions and who may act on whose applications (docs/security.md). */
  policy?: Partial<SubmissionPolicy>;
  /** Event logs in Kubernetes mode (the chart's `history` values). */
  history?: NodePoolsFile['history'];
}

/** The event-log rules of a `history` section: none when it is off or names no directory. */
export function eventLogRules(history: NodePoolsFile['history']): RulesOptions['eventLog'] {
  if (!history?.eventLogDir || history.enabled === false) return undefined;
  return {
    dir: history.eventLogDir,
    ...(history.rollingMaxFileSize ? { rollingMaxFileSize: history.rollingMaxFileSize } : {}),
    s3: {
      endpoint: history.s3Endpoint, pathStyleAccess: history.pathStyleAccess, credentialsSecret: history.credentialsSecret,
      ...(history.s3Region ? { region: history.s3Region } : {}),
      ...(history.driverKeys === 'versitygw' ? { incomingDir: incomingDir(history) } : {}),
    },
  };
}

/** With a key per application, where drivers' folders are: the setting, else spark-incoming beside the event logs. */
export function incomingDir(history: NodePoolsFile['history']): string | undefined {
  if (history?.incomingDir) return history.incomingDir;
  const bucket = /^(s3a?:\/\/[^/]+)/.exec(history?.eventLogDir ?? '')?.[1];
  return bucket ? `${bucket}/spark-incoming` : undefined;
}

/** Where ended pods' logs are archived: the setting, else spark-logs beside an s3a:// event log dir. */
export function logArchiveDir(history: NodePoolsFile['history']): string | undefined {
  if (!history || history.enabled === false) return undefined;
  if (history.logArchiveDir) return history.logArchiveDir;
  const bucket = /^(s3a?:\/\/[^/]+)/.exec(history.eventLogDir ?? '')?.[1];
  return bucket ? `${bucket}/spark-logs` : undefined;
}

export function rulesFrom(nodePoolsFile: string | undefined, namespace: string, placement?: string): AdmissionRules {
  return rulesOf(nodePoolsFile ? readNodePools(nodePoolsFile) : undefined, namespace, placement);
}

/** The rules of a node-pool file already read (none: this machine's one pool). */
export function rulesOf(file: NodePoolsFile | undefined, namespace: string, placement?: string, policyVersion?: string): AdmissionRules {
  const extra = (file ?? {}) as ServiceConfigFile;
  return buildRules({
    nodePools: file?.nodePools ?? [thisMachinePool()],
    sizing: file?.sizing,
    namespace,
    placement: (placement ?? extra.placement ?? 'generic') as PlacementRules | 'generic',
    images: extra.images,
    imagePattern: extra.imagePattern,
    defaultEngineVersion: extra.defaultEngineVersion,
    engineVersions: extra.engineVersions,
    serviceAccount: extra.serviceAccount,
    driverService: extra.driverService || undefined,
    policy: extra.policy,
    eventLog: eventLogRules(file?.history),
    archiveLogs: logArchiveDir(file?.history) !== undefined,
    policyVersion,
  });
}
