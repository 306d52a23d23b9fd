// The options of local mode's cluster (local-cluster.ts) and of the parts it is made of.
import type { AdmissionRules } from '../../domain/index.js';
import type { WriteFileAtomic } from '../../lib/atomic-file.js';
import type { LocalLogger } from './logger.js';
import type { DriverSandbox } from './sandbox.js';
import type { SparkInstall } from './spark-envs.js';

export interface LocalClusterOptions {
  dataDir: string;
  rules: AdmissionRules;
  sparkSubmit: string;
  python?: string;
  /** Cores this machine lends to drivers. */
  cores: number;
  /** How often re-attached drivers (started before a restart) are checked. */
  pollMs?: number;
  /** The service's logger (background failures are logged here); default: warnings to stderr. */
  log?: LocalLogger;
  /** Where records and templates are written; tests inject failures (a full disk) here. */
  writeFile?: WriteFileAtomic;
  /**
   * Applications with this label set to "true" start at once and hold none of the batch cores:
   * interactive drivers (notebook kernels) idle most of the time, and a person waiting behind a
   * batch queue is worse than sharing the CPU. Undefined: every application queues.
   */
  interactiveLabel?: string;
  /** Drivers start inside this sandbox (sandbox.ts): no driver reads the data dir or runs as the service. */
  sandbox?: DriverSandbox;
  /** The share of `cores` one key's batch applications may hold at once (fair-queue.ts); undefined or 0: no share. */
  keyCoreShare?: number;
  /** Bytes each driver's work dir may take, on a tmpfs of its own (work-dir-space.ts; needs root). Undefined: no cap. */
  workDirCap?: number;
  /** Bytes each driver's log file may take: its head and its tail (log-cap.ts). Undefined: no cap. */
  logCap?: number;
  /** Bytes all drivers' logs may take together, on the records' filesystem (log-budget.ts). Undefined: no total bound. */
  logBudget?: number;
  /**
   * A retried kernel's fresh launcher token (its first is spent and its file deleted): written
   * where its driver's env names the file before each later attempt starts. Undefined: none.
   */
  retryLauncherToken?: (kernelId: string, attempt: number) => string;
  /**
   * The Spark of each engineVersion (spark-envs.ts): ready now, or prepared (a virtualenv made)
   * at its first application. Undefined: every application runs `sparkSubmit`.
   */
  sparkEnvs?: {
    ready(version: string): Promise<SparkInstall | undefined>;
    prepare(version: string): Promise<SparkInstall>;
  };
}
