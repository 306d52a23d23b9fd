// Local mode's side of retries (domain/attempts.ts decides): how a driver process's end reads
// as an attempt's end, and the record change and next driver pod that follow it.
//
// What out of memory means here: executors are threads of the driver's JVM (master local[N]),
// so there is one heap, the driver's (spark.driver.memory). A task that runs out of it makes
// Spark end the JVM with its OOM exit code (52, from the task thread's uncaught-exception
// handler): that end is read as the driver's OOM, and the retry raises the driver's memory.
import type { V1Pod } from '@kubernetes/client-node';
import type { ApplicationAttempt, ApplicationConfig } from '../../schemas/index.js';
import {
  ANNOTATION_OVERRIDES, type AttemptDecision, type AttemptEnd, decideAfterAttempt, endAttempt, type AdmissionRules, SPARK_OOM_EXIT_CODE, withRetryOverrides,
} from '../../domain/index.js';
import type { AppRecord } from '../cluster.js';

/**
 * How a local driver process ended, as an attempt's end. `suffix`: what else is known (a full
 * work dir); `stopReason`: why the service stopped it, when it was not a user.
 */
export function localAttemptEnd(code: number | undefined, stopRequested: boolean | undefined, suffix = '', stopReason?: string): AttemptEnd {
  if (stopRequested) return { reason: 'Stopped', exitCode: code ?? null, detail: stopReason ?? 'stopped by a user' };
  if (code === undefined) return { reason: 'Unknown', exitCode: null, detail: 'the driver process ended without recording an exit code' };
  if (code === 0) return { reason: 'Completed', exitCode: 0, detail: 'exit code 0' };
  if (code === SPARK_OOM_EXIT_CODE) {
    return { reason: 'OOMKilled', exitCode: code, role: 'driver', detail: `exit code ${code}, Spark's out-of-memory exit (local mode: the executors are threads of the driver's JVM)${suffix}` };
  }
  return { reason: 'Error', exitCode: code, detail: `exit code ${code}${suffix}` };
}

/** The attempt that starts now, added to the record's attempts. */
export function startAttempt(record: AppRecord, startedAt: string): Pick<AppRecord, 'attempt' | 'attempts'> {
  const attempt = record.attempt ?? 1;
  const { driver, executor } = record.config;
  const started: ApplicationAttempt = {
    attempt, driverPod: record.appName, startedAt, endedAt: null, exitCode: null,
    memory: { ...(driver?.memory ? { driver: driver.memory } : {}), ...(executor?.memory ? { executor: executor.memory } : {}) },
  };
  return { attempt, attempts: [...(record.attempts ?? []).filter((a) => a.attempt !== attempt), started] };
}

export interface AfterRun {
  /** The record's change: the end, or PENDING for the next attempt. */
  change: Partial<AppRecord>;
  decision: AttemptDecision;
}

/** What follows a driver process's end: the record's change, and whether a new attempt starts. The application's startedAt stays its first attempt's. */
export function afterRun(record: AppRecord, end: AttemptEnd, endedAt: string, rules: Pick<AdmissionRules, 'pools'>): AfterRun {
  const running = record.attempts?.find((a) => a.attempt === (record.attempt ?? 1)) ?? { attempt: record.attempt ?? 1, driverPod: record.appName, startedAt: record.startedAt };
  const attempts = [...(record.attempts ?? []).filter((a) => a !== running), endAttempt(running, end, endedAt)];
  const decision = decideAfterAttempt(record.config, attempts, end, rules);
  if (decision.action === 'end') return { decision, change: { state: decision.state, stateDetail: decision.detail, endedAt, attempts } };
  return { decision, change: { state: 'PENDING', stateDetail: decision.detail, attempt: decision.attempt, attempts } };
}

/** The next attempt's bare pod: the admitted one with the retry's changes in its overrides (admission renders it again). */
export function retryPod(pod: V1Pod, change: ApplicationConfig): V1Pod {
  if (Object.keys(change).length === 0) return pod;
  const raw = pod.metadata?.annotations?.[ANNOTATION_OVERRIDES];
  const overrides = raw ? JSON.parse(raw) as ApplicationConfig : {};
  const annotations = { ...pod.metadata?.annotations, [ANNOTATION_OVERRIDES]: JSON.stringify(withRetryOverrides(overrides, change)) };
  return { ...pod, metadata: { ...pod.metadata, annotations } };
}
