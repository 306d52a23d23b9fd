// Spark's event logs, the record of a run that its History Server renders after the driver is
// gone. Admission turns them on for every application like the other defaults (a template or a
// submission may still override each key), and marks each run with its appName so the service
// can tell which Spark application id belongs to which application.

export interface EventLogRules {
  /** Where drivers write their event logs: `file:///…` in local mode, `s3a://bucket/prefix` or a volume on Kubernetes. */
  dir: string;
  /** Spark rolls a long run's log into files of this size, so no run writes one huge file. */
  rollingMaxFileSize: string;
}

/**
 * The Spark property that names the application a run belongs to: the driver pod's name, which
 * is the appName (spark-properties.ts). A submission cannot set it: `spark.kubernetes.*` keys
 * outside the allowlist are refused (kubernetes-properties.ts).
 */
export const APP_NAME_PROPERTY = 'spark.kubernetes.driver.pod.name';

export function eventLogDefaults(rules: EventLogRules | undefined): Record<string, string> {
  if (!rules) return {};
  return {
    'spark.eventLog.enabled': 'true',
    'spark.eventLog.dir': rules.dir,
    'spark.eventLog.rolling.enabled': 'true',
    'spark.eventLog.rolling.maxFileSize': rules.rollingMaxFileSize,
  };
}

/** Whether an application's effective config had Spark write an event log. */
export const writesEventLog = (engineConf: Record<string, string> | undefined): boolean =>
  engineConf?.['spark.eventLog.enabled']?.trim().toLowerCase() === 'true';
