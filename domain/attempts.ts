// Retries as new attempts: given an application's restartPolicy, its attempts so far and how
// the last one ended, whether a new attempt starts (now or after the interval) or the
// application ends, and what changes for the next one. Pure: local mode and the Kubernetes
// controller both ask it, with the facts their own platform gives (an exit code, a pod's
// termination reason, an eviction).
import { createHash } from 'node:crypto';
import type { ApplicationAttempt, ApplicationConfig, ApplicationState, PodConfig } from '../schemas/index.js';
import { formatMemoryMib, parseMemoryMib } from './quantities.js';
import type { AdmissionRules } from './rules.js';

/** How an attempt ended, as the API shows it (`attempts[].reason`). */
export type AttemptReason = 'Completed' | 'Error' | 'OOMKilled' | 'Evicted' | 'NodeLost' | 'DriverDeleted' | 'Stopped' | 'Unknown';
export type MemoryRole = 'driver' | 'executor';

export interface AttemptEnd {
  reason: AttemptReason;
  exitCode: number | null;
  /** Whose memory ran out (reason OOMKilled). */
  role?: MemoryRole;
  /** What the platform said, for people: `exit code 1`, `the node was lost`. */
  detail: string;
}

export interface RetryPolicy { type: 'Never' | 'OnFailure' | 'Always'; retries: number; retryIntervalSeconds: number }

export const DEFAULT_RETRIES = 3;
export const DEFAULT_RETRY_INTERVAL_SECONDS = 10;
/** Attempts that do not count (evictions, lost nodes) are still bounded: a pool that evicts forever must not loop forever. */
export const MAX_UNCOUNTED_ATTEMPTS = 10;
/** An attempt that ran out of memory is retried with this much more for that role (then capped). */
export const MEMORY_GROWTH_FACTOR = 2;

/** Spark's exit code when a JVM ends on an OutOfMemoryError (SparkExitCode.OOM). */
export const SPARK_OOM_EXIT_CODE = 52;

/** Ends that are the platform's doing, not the application's: retried without counting. */
const NOT_COUNTED = new Set<AttemptReason>(['Evicted', 'NodeLost', 'DriverDeleted']);

export type AttemptDecision =
  | { action: 'end'; state: ApplicationState; detail: string }
  | {
    action: 'retry';
    /** The next attempt's number. */
    attempt: number;
    delaySeconds: number;
    /** Overrides to merge into the submission's for the next attempt (more memory), empty when none. */
    overrides: ApplicationConfig;
    /** For stateDetail: why, and what changes. */
    detail: string;
  };

/**
 * The driver pod of an attempt (Kubernetes mode): the first has the application's name, each
 * later one a name of its own derived from its number, so two replicas that both believe they
 * lead can only ever create the same pod, and the second is refused.
 */
export function attemptPodName(appName: string, attempt: number): string {
  if (attempt <= 1) return appName;
  const suffix = `-attempt-${attempt}`;
  if (appName.length + suffix.length <= POD_NAME_LIMIT) return `${appName}${suffix}`;
  // Too long for a DNS label (the driver's hostname): shorten the name, keeping a digest of the
  // whole of it so two applications sharing a prefix stay apart and the name stays deterministic.
  const digest = createHash('sha256').update(appName).digest('hex').slice(0, 8);
  const kept = appName.slice(0, POD_NAME_LIMIT - suffix.length - digest.length - 1).replace(/-+$/, '');
  return `${kept}-${digest}${suffix}`;
}

/** A pod's hostname is a DNS-1123 label: at most 63 characters. */
const POD_NAME_LIMIT = 63;

/**
 * When the next attempt may start: the last attempt's end, plus the interval when it counted
 * (an eviction or a lost node is retried at once). Milliseconds since the epoch.
 */
export function nextAttemptDue(attempts: readonly ApplicationAttempt[], policy: RetryPolicy): number {
  const ended = Date.parse(attempts[attempts.length - 1]?.endedAt ?? '');
  return Number.isFinite(ended) ? ended + nextAttemptDelayMs(attempts, policy) : 0;
}

/**
 * How long after the last attempt's end the next one starts (0 when none ended, or it did not
 * count). A duration, not a time: a reader on another host (the gateway) times it from its own
 * news of that end, so no comparison of two hosts' clocks is needed.
 */
export function nextAttemptDelayMs(attempts: readonly ApplicationAttempt[], policy: RetryPolicy): number {
  const last = attempts[attempts.length - 1];
  if (!last || !Number.isFinite(Date.parse(last.endedAt ?? ''))) return 0;
  return last.counted === false ? 0 : policy.retryIntervalSeconds * 1000;
}

export function retryPolicy(config: Pick<ApplicationConfig, 'restartPolicy'> | undefined): RetryPolicy {
  const policy = config?.restartPolicy ?? {};
  return {
    type: policy.type ?? 'Never',
    retries: policy.retries ?? DEFAULT_RETRIES,
    retryIntervalSeconds: policy.retryIntervalSeconds ?? DEFAULT_RETRY_INTERVAL_SECONDS,
  };
}

export const countsAsAttempt = (reason: AttemptReason): boolean => !NOT_COUNTED.has(reason);

/** The state an application ends in after an attempt that is not retried. */
export function finalState(reason: AttemptReason): ApplicationState {
  if (reason === 'Completed') return 'COMPLETED';
  if (reason === 'Stopped') return 'KILLED';
  if (reason === 'Unknown') return 'UNKNOWN';
  return 'FAILED';
}

/** The ended attempt's record: the running one with its end. */
export function endAttempt(running: ApplicationAttempt, end: AttemptEnd, endedAt: string): ApplicationAttempt {
  const reason = end.reason === 'OOMKilled' && end.role ? `OOMKilled (${end.role})` : end.reason;
  return { ...running, endedAt, exitCode: end.exitCode, reason, detail: end.detail, counted: countsAsAttempt(end.reason) };
}

/**
 * The most memory a role's pod may have: the largest schedulable memory among the pools that
 * could hold it (drivers: non-preemptible pools only; at least its cores).
 */
export function memoryBoundMib(role: MemoryRole, pod: PodConfig, rules: Pick<AdmissionRules, 'pools'>): number {
  const pools = rules.pools.filter((p) => (role === 'executor' || !p.preemptible) && (pod.cores === undefined || p.cpu >= pod.cores));
  return Math.max(0, ...pools.map((p) => p.maximumSchedulableMemoryRequestMib));
}

/** More memory for `role` after it ran out, within the pools; undefined when it already has the most it may have. */
function moreMemory(role: MemoryRole, config: ApplicationConfig, rules: Pick<AdmissionRules, 'pools'>): { from: number; to: number } | undefined {
  const pod = config[role] ?? {};
  const from = parseMemoryMib(pod.memory ?? '1g');
  const to = Math.min(Math.floor(from * MEMORY_GROWTH_FACTOR), memoryBoundMib(role, pod, rules));
  return to > from ? { from, to } : undefined;
}

/**
 * What follows an attempt's end. `attempts`: every attempt, the one that just ended last (with
 * `counted` set, as endAttempt writes it). `config`: that attempt's effective config.
 */
export function decideAfterAttempt(config: ApplicationConfig, attempts: ApplicationAttempt[], end: AttemptEnd, rules: Pick<AdmissionRules, 'pools'>): AttemptDecision {
  const policy = retryPolicy(config);
  const current = attempts.length;
  const ended = (why: string): AttemptDecision => ({ action: 'end', state: finalState(end.reason), detail: why });
  if (end.reason === 'Completed' || end.reason === 'Stopped' || end.reason === 'Unknown') return ended(end.detail);
  if (policy.type === 'Never') return ended(end.detail);
  const next = current + 1;
  const delaySeconds = policy.retryIntervalSeconds;
  if (!countsAsAttempt(end.reason)) {
    const uncounted = attempts.filter((a) => a.counted === false).length;
    if (uncounted > MAX_UNCOUNTED_ATTEMPTS) return ended(`${end.detail}; ${uncounted} attempts ended this way, the most that are retried`);
    return { action: 'retry', attempt: next, delaySeconds: 0, overrides: {}, detail: `attempt ${current}: ${end.detail} (not counted): attempt ${next} starts` };
  }
  const counted = attempts.filter((a) => a.counted !== false).length;
  if (counted > policy.retries) {
    return ended(`${end.detail}; attempt ${current} was the last (restartPolicy.retries ${policy.retries})`);
  }
  const retry = `retry ${counted} of ${policy.retries}`;
  if (end.reason === 'OOMKilled' && end.role) {
    const memory = moreMemory(end.role, config, rules);
    if (!memory) return ended(`${end.detail}; the ${end.role} ran out of memory with the most a node pool holds (${config[end.role]?.memory}): not retried`);
    const overrides: ApplicationConfig = { [end.role]: { memory: formatMemoryMib(memory.to) } };
    const detail = `attempt ${current}: the ${end.role} ran out of memory (${end.detail}): attempt ${next} (${retry}) with ${end.role} memory ${formatMemoryMib(memory.to)} instead of ${formatMemoryMib(memory.from)}`;
    return { action: 'retry', attempt: next, delaySeconds, overrides, detail };
  }
  return { action: 'retry', attempt: next, delaySeconds, overrides: {}, detail: `attempt ${current}: ${end.detail}: attempt ${next} (${retry}) starts after ${delaySeconds} s` };
}

/** The submission's overrides with a retry's changes merged in (the pod-config objects by field). */
export function withRetryOverrides(overrides: ApplicationConfig, change: ApplicationConfig): ApplicationConfig {
  const merged: ApplicationConfig = { ...overrides };
  for (const role of ['driver', 'executor'] as const) {
    if (change[role]) merged[role] = { ...overrides[role], ...change[role] };
  }
  return merged;
}
