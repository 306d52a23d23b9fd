// Kubernetes mode's history from the `history` section of the node-pool file (the chart's
// values): the object store the event logs and archived logs are in (credentials from the
// environment, the chart's Secret), the controller's log archive, and the runs' history behind
// the History Server. Absent or off: logs go with their pods, the UI with its driver.
import type { NodePoolsFile } from '../schemas/index.js';
import type { EventFeed } from '../cluster/events.js';
import { ObjectStore, objectStoreFromEnv, parseS3Url } from '../cluster/history/object-store.js';
import { RemoteSparkStatic } from '../cluster/history/remote-spark-static.js';
import { readVersionedStatic } from '../cluster/history/spark-static-dir.js';
import type { SparkStaticSource } from '../dashboard/spark-ui-proxy.js';
import { KubernetesSparkHistory } from '../cluster/kubernetes/kubernetes-history.js';
import { LogArchive } from '../cluster/kubernetes/log-archive.js';
import type { KubernetesClusterOptions } from '../cluster/kubernetes/kubernetes-cluster.js';
import { VersityEventLogKeys } from '../cluster/history/event-log-keys.js';
import { incomingDir, logArchiveDir } from './rules.js';

export interface KubernetesHistoryWiring {
  logArchive?: LogArchive;
  /** The runs' history (needs the History Server's address, `serverUrl`); undefined without it. */
  history(events: EventFeed, retentionMs: number | undefined, log: (message: string) => void): KubernetesSparkHistory | undefined;
  /** Spark's static files for the Spark UI proxy's anonymous requests, from the History Server; undefined without one. */
  sparkStatic?: RemoteSparkStatic;
  /** A key per application for drivers' event logs (the controller's part); undefined: drivers share one. */
  eventLogAccess?: KubernetesClusterOptions['eventLogAccess'];
}

export function kubernetesHistory(section: NodePoolsFile['history'], env = process.env): KubernetesHistoryWiring {
  const archiveDir = logArchiveDir(section);
  if (!section || section.enabled === false || (!archiveDir && !section.eventLogDir)) return { history: () => undefined };
  // The region the History Server and drivers sign for (history.s3Region), else AWS_REGION.
  const fromEnv = objectStoreFromEnv(section.s3Endpoint, section.pathStyleAccess ?? true, env);
  const options = { ...fromEnv, region: section.s3Region ?? fromEnv.region };
  const stores = new Map<string, ObjectStore>();
  const store = (bucket: string) => {
    if (!stores.has(bucket)) stores.set(bucket, new ObjectStore(bucket, options));
    return stores.get(bucket)!;
  };
  const archiveAt = archiveDir ? parseS3Url(archiveDir) : undefined;
  if (archiveDir && !archiveAt) throw new Error(`history.logArchiveDir must be s3a://bucket/prefix, not ${archiveDir}`);
  const logArchive = archiveAt ? new LogArchive(store(archiveAt.bucket), archiveAt.prefix) : undefined;
  const eventsAt = section.eventLogDir ? parseS3Url(section.eventLogDir) : undefined;
  return {
    logArchive,
    eventLogAccess: eventsAt ? perApplicationKeys(section, eventsAt, store(eventsAt.bucket), archiveAt?.prefix, env) : undefined,
    sparkStatic: section.serverUrl ? new RemoteSparkStatic({ server: new URL(section.serverUrl) }) : undefined,
    history: (events, retentionMs, log) => eventsAt && section.serverUrl
      ? new KubernetesSparkHistory({ store: store(eventsAt.bucket), eventLogPrefix: eventsAt.prefix, server: new URL(section.serverUrl), logArchive, events, log, retentionMs })
      : undefined,
  };
}

/**
 * `driverKeys: versitygw`: the controller makes each driver's key through versitygw's admin API
 * with its own key (which must be a versitygw admin); drivers' folders in the event logs' bucket.
 */
function perApplicationKeys(
  section: NonNullable<NodePoolsFile['history']>, eventsAt: { bucket: string; prefix: string }, store: ObjectStore, archivePrefix: string | undefined, env: NodeJS.ProcessEnv,
): KubernetesClusterOptions['eventLogAccess'] {
  if (section.driverKeys !== 'versitygw') return undefined;
  const incomingAt = parseS3Url(incomingDir(section) ?? '');
  if (!incomingAt?.prefix || incomingAt.bucket !== eventsAt.bucket) throw new Error('history.incomingDir must be s3a://<the event logs\' bucket>/prefix (the controller moves logs within one bucket)');
  // Drivers' keys reach their folders: neither the history nor the archived logs may be in one, nor the folders in those.
  const overlaps = (a: string, b: string) => a === b || a.startsWith(`${b}/`) || b.startsWith(`${a}/`) || a === '' || b === '';
  if ([eventsAt.prefix, archivePrefix].some((p) => p !== undefined && overlaps(incomingAt.prefix, p))) {
    throw new Error('history.incomingDir must be a prefix of its own, apart from eventLogDir and logArchiveDir');
  }
  const adminEndpoint = section.storeAdminEndpoint ?? section.s3Endpoint;
  if (!adminEndpoint) throw new Error('history.driverKeys versitygw needs s3Endpoint or storeAdminEndpoint (versitygw\'s admin API)');
  const fromEnv = objectStoreFromEnv(section.s3Endpoint, section.pathStyleAccess ?? true, env);
  const { accessKey, secretKey } = fromEnv;
  const region = section.s3Region ?? fromEnv.region;
  const keys = new VersityEventLogKeys({ adminEndpoint, accessKey, secretKey, region, store });
  return { keys, store, incomingPrefix: incomingAt.prefix, eventLogPrefix: eventsAt.prefix };
}

/**
 * Spark's static files in Kubernetes mode, by version: from `dir` (one folder per offered version,
 * the chart's api.sparkStaticFromImages) when it has that version, else the History Server's own
 * Spark's from it; none named (a sandboxed page's script asking by a path it made): the History
 * Server's. Undefined when neither is there.
 */
export function kubernetesSparkStatic(remote: RemoteSparkStatic | undefined, dir: string | undefined): SparkStaticSource | undefined {
  if (!dir) return remote?.reader;
  return async (rest, version) => (version === undefined ? undefined : await readVersionedStatic(dir, rest, version)) ?? remote?.reader(rest, version);
}
