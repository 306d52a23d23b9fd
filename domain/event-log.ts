// Spark's event logs, the record of a run that its History Server renders after the driver is
// gone. Admission turns them on for every application like the other defaults (a template or a
// submission may still override each key), and marks each run with its appName so the service
// can tell which Spark application id belongs to which application.
import type { V1EnvVar } from '@kubernetes/client-node';
import { appEventLogDir, eventLogSecretName } from './event-log-access.js';

export interface EventLogRules {
  /** Where drivers write their event logs: `file:///…` in local mode, `s3a://bucket/prefix` or a volume on Kubernetes. */
  dir: string;
  /** Spark rolls a long run's log into files of this size, so no run writes one huge file. */
  rollingMaxFileSize: string;
  /** Object storage through Spark's S3A connector (Kubernetes mode: `dir` is `s3a://bucket/prefix`). */
  s3?: S3EventLogStore;
}

export interface S3EventLogStore {
  /** The S3 API's address (absent: AWS's own); e.g. MinIO's or the test bed's server. */
  endpoint?: string;
  /** Path-style requests (`endpoint/bucket/key`), as most S3-compatible servers want. */
  pathStyleAccess?: boolean;
  /**
   * The region S3A signs for: Spark 4's S3A (AWS SDK v2) infers none from a custom endpoint and
   * an S3-compatible server answers 400 to another region's signature.
   */
  region?: string;
  /**
   * The Secret whose AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY the driver and its executors get
   * as environment variables (S3A reads them there). Only its name is in the config; the values
   * never are, so neither the API nor the Spark UI's environment page shows them.
   */
  credentialsSecret?: string;
  /**
   * Object storage per application (event-log-access.ts): each driver writes into its own folder
   * under this `s3a://` directory with a key of its own (the Secret `<appName>-event-log`, which
   * the controller creates), instead of into `dir` with `credentialsSecret`.
   */
  incomingDir?: string;
}

/**
 * Holds an ended pod until the controller has archived its log (cluster/kubernetes/log-archive.ts):
 * a pod deleted right after its end keeps its log. Admission adds it when logs are archived.
 */
export const LOG_ARCHIVE_FINALIZER = 'submission-service.io/log-archive';

/** A pod's finalizers with the log archive's (once), when logs are archived; driver and executor pods alike. */
export function archiveFinalizers(finalizers: string[] | undefined, archiveLogs: boolean | undefined): { finalizers?: string[] } {
  if (!archiveLogs) return finalizers ? { finalizers } : {};
  const current = finalizers ?? [];
  return { finalizers: current.includes(LOG_ARCHIVE_FINALIZER) ? current : [...current, LOG_ARCHIVE_FINALIZER] };
}

/** The variables S3A's default credential chain reads, and the Secret keys that hold them. */
export const S3_CREDENTIAL_VARIABLES = ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY'] as const;

/**
 * The Spark property that names the application a run belongs to: the driver pod's name, which
 * is the appName (spark-properties.ts). A submission cannot set it: `spark.kubernetes.*` keys
 * outside the allowlist are refused (kubernetes-properties.ts).
 */
export const APP_NAME_PROPERTY = 'spark.kubernetes.driver.pod.name';

export function eventLogDefaults(rules: EventLogRules | undefined): Record<string, string> {
  if (!rules) return {};
  const defaults: Record<string, string> = {
    'spark.eventLog.enabled': 'true',
    'spark.eventLog.dir': rules.dir,
    'spark.eventLog.rolling.enabled': 'true',
    'spark.eventLog.rolling.maxFileSize': rules.rollingMaxFileSize,
    // Sizing from past runs reads each executor's peak memory from the log (domain/run-profile.ts):
    // per stage (a few lines per stage), and the process's RSS besides the JVM's own figures.
    'spark.eventLog.logStageExecutorMetrics': 'true',
    'spark.executor.processTreeMetrics.enabled': 'true',
    // Spark 4 compresses event logs (zstd) by default; the service reads a log's head as lines
    // (event-log-head.ts) to know whose run it is, so every version writes them plain, as 3.x did.
    'spark.eventLog.compress': 'false',
  };
  const s3 = rules.s3;
  // S3A deletes the parent "directory" markers after every file it writes, by default; stores
  // that keep directories as directories (MinIO, versitygw) refuse that delete and S3A retries it
  // for minutes. Kept markers cost nothing on AWS either (Hadoop 3.3.1+ readers understand them).
  if (s3) defaults['spark.hadoop.fs.s3a.directory.marker.retention'] = 'keep';
  if (s3?.endpoint) defaults['spark.hadoop.fs.s3a.endpoint'] = s3.endpoint;
  if (s3?.pathStyleAccess !== undefined) defaults['spark.hadoop.fs.s3a.path.style.access'] = String(s3.pathStyleAccess);
  if (s3?.region) defaults['spark.hadoop.fs.s3a.endpoint.region'] = s3.region;
  // Executors get no credentials: only the driver writes the event log, and every pod that
  // holds the key is one more place user code can read it from (docs/security.md "Object storage").
  return defaults;
}

/**
 * The driver's variables from the credentials Secret, when its run writes an event log to object
 * storage: its application's own Secret when each application has a key, else the shared one.
 */
export function eventLogEnv(rules: EventLogRules | undefined, engineConf: Record<string, string> | undefined, appName: string): V1EnvVar[] {
  const secret = rules?.s3?.incomingDir ? eventLogSecretName(appName) : rules?.s3?.credentialsSecret;
  if (!secret || !writesEventLog(engineConf)) return [];
  return S3_CREDENTIAL_VARIABLES.map((name) => ({ name, valueFrom: { secretKeyRef: { name: secret, key: name } } }));
}

/**
 * Where the driver writes its event log: with a key per application, its own folder instead of
 * the shared directory (the effective config keeps the shared one: that is where the log ends up,
 * once the controller has moved it). A directory the run chose itself is left as it is.
 */
export function driverEventLogDir(rules: EventLogRules | undefined, props: Record<string, string>, appName: string): string | undefined {
  const dir = props['spark.eventLog.dir'];
  const incoming = rules?.s3?.incomingDir;
  if (!incoming || !rules || dir === undefined || !writesEventLog(props)) return dir;
  return dir.replace(/\/+$/, '') === rules.dir.replace(/\/+$/, '') ? appEventLogDir(incoming, appName) : dir;
}

/** Whether an application's effective config had Spark write an event log. */
export const writesEventLog = (engineConf: Record<string, string> | undefined): boolean =>
  engineConf?.['spark.eventLog.enabled']?.trim().toLowerCase() === 'true';
