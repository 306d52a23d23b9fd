// Retries as new attempts in Kubernetes mode: the Application's status once an attempt's
// driver pod has ended, and what the next attempt's pod is made of. Pure: domain/attempts.ts
// decides (the same decisions as local mode), attempt-end.ts reads the pods, and the status
// controller (reconciler.ts, attempt-starter.ts) writes what this returns; the API's reads
// (app-cache.ts) answer with the same function, so a read never disagrees with the write.
import type { V1Pod } from '@kubernetes/client-node';
import type { ApplicationAttempt, ApplicationConfig } from '../../schemas/index.js';
import {
  type AdmissionRules, type AttemptEnd, decideAfterAttempt, endAttempt, retryPolicy, withRetryOverrides,
} from '../../domain/index.js';
import { isTerminal } from '../cluster.js';
import { kubernetesAttemptEnd } from './attempt-end.js';
import type { ApplicationResource, ApplicationStatus, DriverView } from './records.js';

/** What an attempt's end needs beside the status: the attempt's executors (an OOM kill shows there) and the pools (how far memory may grow). */
export interface AttemptFacts {
  /** Asked only when an attempt has just ended under OnFailure (the cache's reads stay cheap). */
  executors: () => readonly V1Pod[];
  rules?: Pick<AdmissionRules, 'pools'>;
}

/** The Application waits for its next attempt's driver pod (created by attempt-starter.ts). */
export function awaitsNextAttempt(resource: ApplicationResource): boolean {
  const status = resource.status;
  if (!status || (status.attempt ?? 1) <= 1 || isTerminal(status.state)) return false;
  const current = status.attempts?.find((a) => a.attempt === status.attempt);
  return current !== undefined && !current.startedAt;
}

/**
 * The status once the current attempt ended (`status`: desiredStatus's), with restartPolicy
 * applied: unchanged for `Never`, a stop, or a run that has not ended; else either the end
 * (with the reason the executors give) or PENDING for the next attempt, whose record (not
 * started yet, with the memory it will run with) is added to `attempts`.
 */
export function statusAfterAttempt(resource: ApplicationResource, status: ApplicationStatus, driver: DriverView | undefined, facts: AttemptFacts): ApplicationStatus {
  const policy = retryPolicy(resource.spec.config);
  const endedNow = isTerminal(status.state) && !isTerminal(resource.status?.state);
  if (policy.type === 'Never' || !endedNow || status.state === 'KILLED' || resource.spec.stopRequested) return status;
  const attempts = [...(status.attempts ?? [])];
  const ended = attempts[attempts.length - 1];
  if (!ended || ended.attempt !== (status.attempt ?? 1)) return status;
  const endedAt = ended.endedAt ?? status.endedAt ?? new Date().toISOString();
  const end: AttemptEnd = (driver && kubernetesAttemptEnd(driver, facts.executors())) ?? { reason: 'Unknown', exitCode: null, detail: status.stateDetail ?? 'unknown' };
  attempts[attempts.length - 1] = endAttempt({ ...ended, endedAt: null }, end, endedAt);
  const decision = decideAfterAttempt(resource.spec.config ?? {}, attempts, end, facts.rules ?? { pools: [] });
  const transitions = [...(status.transitions ?? [])];
  if (transitions.length > 1 && isTerminal(transitions[transitions.length - 1].state)) transitions.pop();
  if (decision.action === 'end') {
    transitions.push({ state: decision.state, at: endedAt, detail: decision.detail });
    return { ...status, state: decision.state, stateDetail: decision.detail, attempts, transitions };
  }
  transitions.push({ state: 'PENDING', at: endedAt, detail: decision.detail });
  const next: ApplicationAttempt = { attempt: decision.attempt, startedAt: null, endedAt: null, exitCode: null, memory: nextMemory(ended, decision.overrides) };
  return {
    ...status, state: 'PENDING', stateDetail: decision.detail, endedAt: null, runningExecutors: 0,
    attempt: decision.attempt, attempts: [...attempts, next], transitions,
  };
}

function nextMemory(ended: ApplicationAttempt, change: ApplicationConfig): ApplicationAttempt['memory'] {
  const memory = { ...ended.memory };
  if (change.driver?.memory) memory.driver = change.driver.memory;
  if (change.executor?.memory) memory.executor = change.executor.memory;
  return memory;
}

/**
 * The next attempt's overrides: the submission's, with the memory of each role a retry raised
 * since the first attempt (cumulative: an executor raised at attempt 2 keeps its memory at 3).
 */
export function nextAttemptOverrides(resource: ApplicationResource, submitted: string | undefined): ApplicationConfig {
  const overrides = submitted ? JSON.parse(submitted) as ApplicationConfig : {};
  const attempts = resource.status?.attempts ?? [];
  const first = attempts[0]?.memory ?? {};
  const next = attempts.find((a) => a.attempt === resource.status?.attempt)?.memory ?? {};
  const change: ApplicationConfig = {};
  for (const role of ['driver', 'executor'] as const) {
    if (next[role] && next[role] !== first[role]) change[role] = { memory: next[role] };
  }
  return withRetryOverrides(overrides, change);
}
