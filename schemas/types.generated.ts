/* Generated from schemas/*.json by `npm run generate:types`. Do not edit. */

/**
 * Derived from the driver. KILLED: stopped by a user. UNKNOWN: the driver can no longer be observed.
 *
 * This interface was referenced by `Schemas`'s JSON-Schema
 * via the `definition` "ApplicationState".
 */
export type ApplicationState = 'PENDING' | 'RUNNING' | 'COMPLETED' | 'FAILED' | 'KILLED' | 'UNKNOWN';

export interface Schemas {}
/**
 * One run of an application's driver.
 *
 * This interface was referenced by `Schemas`'s JSON-Schema
 * via the `definition` "ApplicationAttempt".
 */
export interface ApplicationAttempt {
  attempt: number;
  /**
   * The attempt's driver pod (Kubernetes mode; local mode: the appName).
   */
  driverPod?: string;
  startedAt: string | null;
  endedAt?: string | null;
  exitCode?: number | null;
  /**
   * How the attempt ended: Completed, Error, OOMKilled (with its role), Evicted, NodeLost, DriverDeleted, Stopped, Unknown.
   */
  reason?: string;
  detail?: string;
  /**
   * False when the attempt does not count against `restartPolicy.retries` (evicted, node lost, driver deleted).
   */
  counted?: boolean;
  /**
   * The attempt's driver and executor memory (raised after an out-of-memory end).
   */
  memory?: {
    driver?: string;
    executor?: string;
  };
}
/**
 * Configuration of a Spark application: in a submission's configOverrides, in a config template, and (merged, defaulted and sized) in the response.
 *
 * This interface was referenced by `Schemas`'s JSON-Schema
 * via the `definition` "ApplicationConfig".
 */
export interface ApplicationConfig {
  /**
   * Language of the application.
   */
  type?: 'Scala' | 'Java' | 'Python' | 'R';
  /**
   * Spark version, e.g. `3.5.7`; chooses the image.
   */
  engineVersion?: string;
  pythonVersion?: '2' | '3';
  /**
   * Spark deploy mode; always `cluster`.
   */
  mode?: 'cluster';
  /**
   * Container image; set from engineVersion by default.
   */
  image?: string;
  /**
   * `local://` path (in the image, or on this machine in local mode) or an object-storage URL.
   */
  mainApplicationFile?: string;
  mainClass?: string;
  /**
   * Arguments of the application: at most 256, each at most 4096 characters.
   *
   * @maxItems 256
   */
  arguments?: string[];
  /**
   * Spark properties with their real keys: at most 256, keys of at most 256 characters, values of at most 4096.
   */
  engineConf?: {
    [k: string]: string;
  };
  driver?: PodConfig;
  executor?: PodConfig;
  /**
   * What happens when a run fails. `Never`: the application ends FAILED. `OnFailure`: the service starts a new attempt (a new driver, after `retryIntervalSeconds`) up to `retries` times; an attempt whose driver was evicted, lost with its node or deleted does not count, and one that ran out of memory is retried with more memory for that role. `Always` is kept for compatibility and behaves as `OnFailure`. In Kubernetes mode each attempt has a driver pod of its own (`<appName>-attempt-<n>` from attempt 2), started once the executors of the one before are gone; the driver pod's own restartPolicy is always `Never`.
   */
  restartPolicy?: {
    type?: 'Never' | 'OnFailure' | 'Always';
    /**
     * Attempts after the first that a failure may start (OnFailure; default 3). Evicted, lost or deleted drivers are retried without counting, up to 10 times in all.
     */
    retries?: number;
    /**
     * Seconds between a failed attempt's end and the next attempt's start (default 10).
     */
    retryIntervalSeconds?: number;
  };
  /**
   * How past runs of the job size this one (README, "Sizing from past runs").
   */
  sizing?: {
    /**
     * `recommend` (the default): GET /api/jobs/{jobName}/recommendation shows a size from the job's past runs; `apply`: admission sizes the executors from them (never below what the runs needed plus a margin, never outside the pools); `off`: neither.
     */
    fromHistory?: 'off' | 'recommend' | 'apply';
  };
}
/**
 * Resources and settings of the driver pod or of each executor pod.
 *
 * This interface was referenced by `Schemas`'s JSON-Schema
 * via the `definition` "PodConfig".
 */
export interface PodConfig {
  /**
   * Tasks run in parallel; a hint for choosing the node pool.
   */
  cores?: number;
  /**
   * CPU requested from Kubernetes, e.g. `1700m`. Defaults to a share of the chosen pool.
   */
  coreRequest?: string;
  /**
   * CPU limit of the pod; none by default.
   */
  coreLimit?: string;
  /**
   * Memory of the Spark process (JVM heap), `m` (MiB) or `g` (GiB). The pod asks 40% more for overhead.
   */
  memory?: string;
  /**
   * Executor only: number of executors (the initial number under dynamic allocation).
   */
  instances?: number;
  /**
   * Kubernetes service account of the pod.
   */
  serviceAccount?: string;
  /**
   * Extra pod labels: at most 32, Kubernetes label syntax (keys of at most 317 characters, values of at most 63).
   */
  labels?: {
    [k: string]: string;
  };
  /**
   * Extra pod annotations: at most 64, values of at most 4096 characters.
   */
  annotations?: {
    [k: string]: string;
  };
  /**
   * Extra environment variables: at most 128, names as Kubernetes allows them (at most 256 characters), values of at most 4096. Local mode refuses those that change how a shell, the loader or an interpreter starts (docs/security.md).
   */
  env?: {
    [k: string]: string;
  };
  /**
   * @maxItems 16
   */
  secrets?:
    | []
    | [SecretMount]
    | [SecretMount, SecretMount]
    | [SecretMount, SecretMount, SecretMount]
    | [SecretMount, SecretMount, SecretMount, SecretMount]
    | [SecretMount, SecretMount, SecretMount, SecretMount, SecretMount]
    | [SecretMount, SecretMount, SecretMount, SecretMount, SecretMount, SecretMount]
    | [SecretMount, SecretMount, SecretMount, SecretMount, SecretMount, SecretMount, SecretMount]
    | [SecretMount, SecretMount, SecretMount, SecretMount, SecretMount, SecretMount, SecretMount, SecretMount]
    | [
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount
      ]
    | [
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount
      ]
    | [
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount
      ]
    | [
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount
      ]
    | [
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount
      ]
    | [
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount
      ]
    | [
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount
      ]
    | [
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount,
        SecretMount
      ];
}
/**
 * A Kubernetes Secret of the applications' namespace mounted into driver and executor pods.
 *
 * This interface was referenced by `Schemas`'s JSON-Schema
 * via the `definition` "SecretMount".
 */
export interface SecretMount {
  /**
   * Name of an existing Secret in the applications' namespace.
   */
  name: string;
  /**
   * Absolute mount path in the pod.
   */
  path: string;
  /**
   * CloudServiceAccount: the secret holds `key.json`, and Spark and Hadoop are configured to use it for object storage.
   */
  secretType?: 'Generic' | 'CloudServiceAccount';
}
/**
 * One page of applications, newest first (by `createdAt`, then `appName` descending); `next` is the cursor of the following page.
 *
 * This interface was referenced by `Schemas`'s JSON-Schema
 * via the `definition` "ApplicationList".
 */
export interface ApplicationList {
  items: Application[];
  next: string | null;
}
/**
 * A submitted application and its record.
 *
 * This interface was referenced by `Schemas`'s JSON-Schema
 * via the `definition` "Application".
 */
export interface Application {
  /**
   * `<jobName>-<yyyymmdd>-<hhmmss>-<5 random>` (submitted with an Idempotency-Key: `idem-<24 hex>-<n>`): the driver pod's name and the application's id.
   */
  appName: string;
  jobName: string;
  /**
   * Empty when no template was used.
   */
  configTemplateName: string;
  labels?: Labels;
  /**
   * Id of the API key that submitted the application (as `keys list` shows it); null when authentication was off.
   */
  submittedBy?: string | null;
  config: ApplicationConfig;
  state?: ApplicationState;
  /**
   * Why the application is in its state, when known (exit code, signal, error).
   */
  stateDetail?: string;
  /**
   * Which attempt of the application the state is about (1 for the first run; restartPolicy OnFailure starts more).
   */
  attempt?: number;
  /**
   * Every run of the application's driver, oldest first: each attempt's times, how it ended and whether it counted against `restartPolicy.retries`.
   */
  attempts?: ApplicationAttempt[];
  createdAt?: string;
  startedAt?: string | null;
  endedAt?: string | null;
  runningExecutors?: number;
  /**
   * Which Spark UI the application's one link (`url`, the dashboard's) opens now: `live`, the running driver's own; `history`, its run rendered by Spark's History Server after the driver ended (until `expiresAt`, the retention); `unavailable`, neither (not started yet, no event log, or expired).
   */
  sparkUi?: {
    state: 'live' | 'history' | 'unavailable';
    url: string | null;
    expiresAt: string | null;
  };
  /**
   * What the run cost, once it ended and its event log was read (local mode): core-hours and GiB-hours its pods requested (driver and executors, for as long as each was held) and used (task CPU time; each executor's peak memory over its life). `used*` are null when no event log could be read.
   */
  cost?: {
    requestedCoreHours: number;
    requestedGibHours: number;
    usedCoreHours: number | null;
    usedGibHours: number | null;
  };
  /**
   * Every state the application went through, oldest first, with when it entered it and why.
   */
  transitions?: {
    state: ApplicationState;
    at: string;
    detail?: string;
  }[];
}
/**
 * An application's own labels: Kubernetes label syntax (`[prefix/]name` keys, values of at most 63 characters). They are set on the driver pod and the application's record, and `GET /api/apps/?labelSelector=key=value` filters by them. Keys beginning with `submission-service/` or `spark-` are the service's and Spark's own and are refused. So are `app.kubernetes.io/name`, `app.kubernetes.io/instance` and `app.kubernetes.io/component`, by which the chart's NetworkPolicies know the service's own pods (400). Keys beginning with `kernel.submission-service.io/` mark notebook kernels: only the notebook gateway sets them (400 otherwise).
 *
 * This interface was referenced by `Schemas`'s JSON-Schema
 * via the `definition` "Labels".
 */
export interface Labels {
  [k: string]: string;
}
/**
 * This interface was referenced by `Schemas`'s JSON-Schema
 * via the `definition` "ConfigTemplateList".
 */
export interface ConfigTemplateList {
  items: ConfigTemplate[];
}
/**
 * A reusable, possibly partial application config. Also the spec of the ConfigTemplate custom resource.
 *
 * This interface was referenced by `Schemas`'s JSON-Schema
 * via the `definition` "ConfigTemplate".
 */
export interface ConfigTemplate {
  /**
   * A DNS-1123 label, unique per namespace.
   */
  name: string;
  config: ApplicationConfig;
}
/**
 * Every error answer: a message a person can act on, and what it concerns.
 *
 * This interface was referenced by `Schemas`'s JSON-Schema
 * via the `definition` "ErrorBody".
 */
export interface ErrorBody {
  message: string;
  statusCode?: number;
  /**
   * The HTTP reason phrase.
   */
  error?: string;
  /**
   * A stable machine-readable code, e.g. `TEMPLATE_NOT_FOUND`.
   */
  code?: string;
  /**
   * For 400: the JSON path of the offending field.
   */
  field?: string;
}
/**
 * One node pool of the cluster. The schedulable maxima default to SPEC's rule 5 (85% of the CPU; 75% of the memory divided by 1.4) when absent.
 *
 * This interface was referenced by `Schemas`'s JSON-Schema
 * via the `definition` "NodePool".
 */
export interface NodePool {
  cloudProvider: string;
  cpu: number;
  instanceName: string;
  maximumSchedulableCoreRequest?: number;
  maximumSchedulableMemoryRequestMib?: number;
  memoryMib: number;
  preemptible: boolean;
}
/**
 * The --node-pools file (the format of example-cluster.json). Other top-level keys are ignored.
 *
 * This interface was referenced by `Schemas`'s JSON-Schema
 * via the `definition` "NodePoolsFile".
 */
export interface NodePoolsFile {
  /**
   * @minItems 1
   */
  nodePools: [NodePool, ...NodePool[]];
  sizing?: SizingRules;
  /**
   * What a submission's configOverrides may name, and who may act on whose applications (docs/security.md).
   */
  policy?: {
    /**
     * Service accounts overrides may name besides the default one.
     *
     * @maxItems 256
     */
    serviceAccounts?: string[];
    /**
     * Secrets overrides may mount (none by default; templates may mount any).
     *
     * @maxItems 256
     */
    secrets?: string[];
    /**
     * Whether a user key may stop, delete and read the log of applications other keys submitted (default false).
     */
    usersActOnAllApplications?: boolean;
    /**
     * spark.kubernetes.* keys a submission's engineConf may set besides the built-in allowlist (docs/security.md); an entry ending in .* allows a family.
     *
     * @maxItems 256
     */
    kubernetesProperties?: string[];
  };
  /**
   * Event logs for every application and the Spark History Server (README "History"); Kubernetes mode.
   */
  history?: {
    /**
     * Whether admission turns event logs on (default true when eventLogDir is set).
     */
    enabled?: boolean;
    /**
     * Where drivers write event logs, e.g. s3a://bucket/spark-events; a template or submission may override spark.eventLog.dir.
     */
    eventLogDir?: string;
    /**
     * Spark rolls a run's event log into files of this size (default 128m).
     */
    rollingMaxFileSize?: string;
    /**
     * The S3 API's address for s3a:// (absent: AWS's own).
     */
    s3Endpoint?: string;
    /**
     * Path-style S3 requests, as MinIO and most S3-compatible servers want.
     */
    pathStyleAccess?: boolean;
    /**
     * The region S3A signs requests for (fs.s3a.endpoint.region), e.g. us-east-1 for most S3-compatible servers: the AWS SDK v2 of Spark 4's S3A does not infer one from a custom endpoint. Absent: S3A's own choice.
     */
    s3Region?: string;
    /**
     * Secret (in the applications' namespace) whose AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY drivers and executors get as environment variables.
     */
    credentialsSecret?: string;
    /**
     * How drivers get their object-store key: shared, every driver the one of credentialsSecret (any application's code reads and writes every event log under eventLogDir); versitygw, a key per application made by the controller through versitygw's admin API, reaching only that application's folder under incomingDir (docs/security.md "Object storage per application").
     */
    driverKeys?: 'shared' | 'versitygw';
    /**
     * With a key per application: where each driver writes its event log, in a folder of its own, until the controller moves it into eventLogDir (default: spark-incoming in the event logs' bucket).
     */
    incomingDir?: string;
    /**
     * With driverKeys versitygw: its admin API (default: s3Endpoint, where versitygw serves it unless started with --admin-port); the controller's key (the api's) must be a versitygw admin.
     */
    storeAdminEndpoint?: string;
    /**
     * Where the controller archives ended pods' logs (default: spark-logs in the event logs' bucket); driver pods carry a finalizer until it has.
     */
    logArchiveDir?: string;
    /**
     * The Spark History Server the API's dashboard proxies an ended run's UI to (the chart's history Service).
     */
    serverUrl?: string;
  };
  /**
   * Per-key limits (README "Limits"); 0 turns one off. The command line's flags win over these.
   */
  limits?: {
    /**
     * Submissions one user key may make per minute (default 60).
     */
    submissionsPerMinute?: number;
    /**
     * Unfinished applications (PENDING or RUNNING) one user key may have at once (default 50).
     */
    applicationsPerKey?: number;
    /**
     * Event streams and followed logs one key, or one address without a key, may hold open (default 16).
     */
    streamsPerKey?: number;
    /**
     * Notebook websockets one key, or one address without a key, may hold open (default 32).
     */
    websocketsPerKey?: number;
  };
}
/**
 * Tunable sizing rules (all optional).
 *
 * This interface was referenced by `Schemas`'s JSON-Schema
 * via the `definition` "SizingRules".
 */
export interface SizingRules {
  /**
   * Cores of a driver that gives none. Default 1.
   */
  defaultDriverCores?: number;
  /**
   * Millicores a default-sized driver leaves of its share of the pool, for per-pod agents beside Spark. Default 140: a 1-core share of 850m gives 710m.
   */
  defaultDriverCoreRequestReserveMillicores?: number;
  /**
   * Spark's memory overhead on top of `memory` in the pod's request. Default 0.4.
   */
  memoryOverheadFactor?: number;
  /**
   * Rule 5, for pools without maxima: CPU not schedulable. Default 0.15.
   */
  nonAllocatableCpuFraction?: number;
  /**
   * Rule 5, for pools without maxima: memory not schedulable. Default 0.25.
   */
  nonAllocatableMemoryFraction?: number;
}
/**
 * This interface was referenced by `Schemas`'s JSON-Schema
 * via the `definition` "ScheduleList".
 */
export interface ScheduleList {
  items: ScheduleRecord[];
}
/**
 * A schedule as the API answers it: its spec, who owns it, and what its ticks did.
 *
 * This interface was referenced by `Schemas`'s JSON-Schema
 * via the `definition` "ScheduleRecord".
 */
export interface ScheduleRecord {
  /**
   * A DNS-1123 label, unique per namespace (local mode: per service).
   */
  name: string;
  /**
   * Cron: 5 fields (minute hour day-of-month month day-of-week, as crontab) or 6 with seconds first. Read by croner; `@daily`-style nicknames are accepted.
   */
  schedule: string;
  /**
   * IANA time zone the schedule is read in (such as Europe/Berlin); default UTC. Across a DST change a time that does not exist runs at the first valid time after it, and a time that occurs twice runs once.
   */
  timeZone?: string;
  /**
   * The job every run belongs to (as in a submission).
   */
  jobName: string;
  /**
   * Template of every run; empty for none.
   */
  configTemplateName?: string;
  configOverrides?: ApplicationConfig;
  labels?: Labels;
  /**
   * When a tick falls due while a run of this schedule has not ended: Allow runs beside it, Forbid skips the tick, Replace stops the running one(s) and runs.
   */
  concurrencyPolicy?: 'Allow' | 'Forbid' | 'Replace';
  /**
   * true: no tick makes a run (pause). Ticks passed while suspended follow startingDeadlineSeconds on resume, like ticks missed while the service was down: at most the latest one runs.
   */
  suspend?: boolean;
  /**
   * A tick found later than this (the service was down, the schedule suspended) is missed instead of run. Absent: no limit (the latest missed tick runs).
   */
  startingDeadlineSeconds?: number;
  /**
   * How many COMPLETED runs of this schedule are kept; older ones are deleted.
   */
  successfulRunsHistoryLimit?: number;
  /**
   * How many ended runs that did not complete (FAILED, KILLED, UNKNOWN) are kept; older ones are deleted.
   */
  failedRunsHistoryLimit?: number;
  /**
   * Id of the API key that created the schedule; its runs are submitted as that key. null when authentication was off.
   */
  createdBy: string | null;
  createdAt: string;
  /**
   * The last tick acted upon (run, skipped or missed).
   */
  lastScheduleTime?: string | null;
  /**
   * appName of the last run made.
   */
  lastRunName?: string | null;
  /**
   * What the last tick did, in words (ran, skipped under Forbid, missed its deadline, refused and why).
   */
  lastOutcome?: string | null;
  /**
   * The next tick (computed when read); null while suspended or when none is left.
   */
  nextRunAt?: string | null;
}
/**
 * Body of POST /api/schedules/ and PUT /api/schedules/{name}: a submission made on a cron schedule. Also the spec of the Schedule custom resource.
 *
 * This interface was referenced by `Schemas`'s JSON-Schema
 * via the `definition` "Schedule".
 */
export interface Schedule {
  /**
   * A DNS-1123 label, unique per namespace (local mode: per service).
   */
  name: string;
  /**
   * Cron: 5 fields (minute hour day-of-month month day-of-week, as crontab) or 6 with seconds first. Read by croner; `@daily`-style nicknames are accepted.
   */
  schedule: string;
  /**
   * IANA time zone the schedule is read in (such as Europe/Berlin); default UTC. Across a DST change a time that does not exist runs at the first valid time after it, and a time that occurs twice runs once.
   */
  timeZone?: string;
  /**
   * The job every run belongs to (as in a submission).
   */
  jobName: string;
  /**
   * Template of every run; empty for none.
   */
  configTemplateName?: string;
  configOverrides?: ApplicationConfig;
  labels?: Labels;
  /**
   * When a tick falls due while a run of this schedule has not ended: Allow runs beside it, Forbid skips the tick, Replace stops the running one(s) and runs.
   */
  concurrencyPolicy?: 'Allow' | 'Forbid' | 'Replace';
  /**
   * true: no tick makes a run (pause). Ticks passed while suspended follow startingDeadlineSeconds on resume, like ticks missed while the service was down: at most the latest one runs.
   */
  suspend?: boolean;
  /**
   * A tick found later than this (the service was down, the schedule suspended) is missed instead of run. Absent: no limit (the latest missed tick runs).
   */
  startingDeadlineSeconds?: number;
  /**
   * How many COMPLETED runs of this schedule are kept; older ones are deleted.
   */
  successfulRunsHistoryLimit?: number;
  /**
   * How many ended runs that did not complete (FAILED, KILLED, UNKNOWN) are kept; older ones are deleted.
   */
  failedRunsHistoryLimit?: number;
}
/**
 * Body of POST /api/apps/.
 *
 * This interface was referenced by `Schemas`'s JSON-Schema
 * via the `definition` "Submission".
 */
export interface Submission {
  /**
   * Groups applications; a DNS-1123 label of at most 41 characters, so that the generated appName is a valid pod name and label value.
   */
  jobName: string;
  /**
   * Name of an existing config template; empty for none.
   */
  configTemplateName?: string;
  configOverrides?: ApplicationConfig;
  labels?: Labels;
}
/**
 * 422: a pod of the application fits no node pool.
 *
 * This interface was referenced by `Schemas`'s JSON-Schema
 * via the `definition` "UnschedulableError".
 */
export interface UnschedulableError {
  advice: string;
  message: string;
  driver?: UnschedulablePod;
  executor?: UnschedulablePod;
}
/**
 * This interface was referenced by `Schemas`'s JSON-Schema
 * via the `definition` "UnschedulablePod".
 */
export interface UnschedulablePod {
  availableNodePools: {
    cloudProvider: string;
    cpu: number;
    instanceName: string;
    maximumSchedulableCoreRequest: number;
    maximumSchedulableMemoryRequestMib: number;
    memoryMib: number;
    preemptible: boolean;
  }[];
  targetInputConfig: PodConfig;
}
