// Application records on Kubernetes. The Application custom resource is the record; its
// status is written by the controller (reconciler.ts) from what the driver pod shows. This
// module is pure: the status an application should have, given its resource and the last
// driver pod seen (live, or the final state of a deleted one), and the API's record of it.
// The API answers with the same function the controller writes with, so a read never
// disagrees with the write that is about to happen.
import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import type { ApplicationAttempt, ApplicationConfig, ApplicationState } from '../../schemas/index.js';
import { applicationLabels, attemptPodName, endAttempt, readConfig, readConfigAnnotation } from '../../domain/index.js';
import { type AppRecord, isTerminal, type Transition } from '../cluster.js';
import { idempotencyOf } from '../app-record.js';
import { type DriverView, kubernetesAttemptEnd } from './attempt-end.js';

export type { DriverView };

export interface ApplicationStatus {
  state?: ApplicationState;
  stateDetail?: string;
  startedAt?: string | null;
  endedAt?: string | null;
  runningExecutors?: number;
  transitions?: Transition[];
  /** Which attempt the state is about (restartPolicy OnFailure: attempt-status.ts); absent: the first. */
  attempt?: number;
  /** Every attempt, oldest first; one whose pod is not created yet has startedAt null. */
  attempts?: ApplicationAttempt[];
}

export interface ApplicationResource {
  apiVersion: string;
  kind: 'Application';
  metadata: { name: string; namespace?: string; uid?: string; creationTimestamp?: string | Date; labels?: Record<string, string>; annotations?: Record<string, string>; resourceVersion?: string };
  /**
   * `stopRequested`: a user or the service asked to stop it (the API writes it; the controller ends
   * the run and writes KILLED); `stopReason`: the service's own reason, written with it, once.
   */
  spec: { jobName: string; configTemplateName: string; config: ApplicationConfig; submittedBy?: string | null; stopRequested?: boolean; stopReason?: string };
  status?: ApplicationStatus;
}

const iso = (value: string | Date | undefined | null): string | null =>
  value === undefined || value === null ? null : new Date(value).toISOString();

/** Container waiting reasons that mean the pod will not start by itself. */
const STUCK_REASONS = new Set(['ErrImagePull', 'ImagePullBackOff', 'InvalidImageName', 'CreateContainerConfigError', 'CreateContainerError', 'CrashLoopBackOff']);

function driverContainer(pod: V1Pod): V1ContainerStatus | undefined {
  return pod.status?.containerStatuses?.[0];
}

/** Why a pending pod is pending: a container waiting reason, else the scheduler's verdict. */
function pendingDetail(pod: V1Pod): string | undefined {
  const waiting = driverContainer(pod)?.state?.waiting;
  if (waiting?.reason && (STUCK_REASONS.has(waiting.reason) || waiting.message)) {
    return waiting.message ? `${waiting.reason}: ${waiting.message}` : waiting.reason;
  }
  const scheduled = pod.status?.conditions?.find((c) => c.type === 'PodScheduled');
  if (scheduled?.status === 'False' && scheduled.reason) return scheduled.message ? `${scheduled.reason}: ${scheduled.message}` : scheduled.reason;
  return waiting?.reason;
}

/** State, times and why, as the driver pod shows them; undefined state means "no news" (phase Unknown). */
export function podState(view: DriverView): { state?: ApplicationState; startedAt: string | null; endedAt: string | null; stateDetail?: string } {
  const { pod } = view;
  const container = driverContainer(pod)?.state;
  const terminated = container?.terminated;
  const startedAt = iso(container?.running?.startedAt ?? terminated?.startedAt ?? (pod.status?.phase === 'Running' ? pod.status?.startTime : undefined));
  switch (pod.status?.phase) {
    case 'Running':
      return { state: 'RUNNING', startedAt, endedAt: null };
    case 'Succeeded':
    case 'Failed': {
      const detail = terminated ? `exit code ${terminated.exitCode}${terminated.reason ? ` (${terminated.reason})` : ''}` : pod.status?.reason ?? pod.status?.message;
      return { state: pod.status.phase === 'Succeeded' ? 'COMPLETED' : 'FAILED', startedAt, endedAt: iso(terminated?.finishedAt) ?? startedAt, stateDetail: detail };
    }
    case 'Unknown':
      // The node lost contact; the pod may still run. Not terminal: no news about the state.
      return { startedAt, endedAt: null, stateDetail: `the driver's node is not reporting (pod phase Unknown)${pod.status?.reason ? `: ${pod.status.reason}` : ''}` };
    default:
      if (view.deleted) return { state: 'UNKNOWN', startedAt, endedAt: null, stateDetail: 'the driver pod was deleted before it started' };
      return { state: 'PENDING', startedAt: null, endedAt: null, stateDetail: pendingDetail(pod) };
  }
}

/** Why the driver pod's config annotation cannot be read (edited after admission), for stateDetail; undefined when it can. */
export function unreadableConfig(pod: V1Pod): string | undefined {
  // readConfigAnnotation keeps each pod object's reading: the cache and the controller ask on every event and pass.
  const { problem } = readConfigAnnotation(pod);
  return problem && `the driver pod's config cannot be read: ${problem}`;
}

export const STOPPED_BY_USER = 'stopped by a user';

/** A stopped application's stateDetail: the reason its stop request carries (the service's own), else a user's stop (as local mode words it). */
export const stopDetail = (resource: ApplicationResource): string => resource.spec.stopReason || STOPPED_BY_USER;

const memoryOf = (config: ApplicationConfig | undefined): ApplicationAttempt['memory'] => ({
  ...(config?.driver?.memory ? { driver: config.driver.memory } : {}), ...(config?.executor?.memory ? { executor: config.executor.memory } : {}),
});

/**
 * The attempts as the current one's driver pod shows them: its record from when it starts,
 * and its end once the state is terminal (an attempt that never started is dropped then: a
 * stop while the next attempt waited). How an end is retried is attempt-status.ts's part.
 */
function currentAttempts(resource: ApplicationResource, driver: DriverView | undefined, state: ApplicationState, times: { startedAt: string | null; endedAt: string | null; detail?: string }): Pick<ApplicationStatus, 'attempt' | 'attempts'> {
  const saved = resource.status ?? {};
  const attempt = saved.attempt ?? 1;
  const attempts = [...(saved.attempts ?? [])];
  let at = attempts.findIndex((a) => a.attempt === attempt);
  const driverPod = driver?.pod.metadata?.name ?? attemptPodName(resource.metadata.name, attempt);
  if (at < 0 && (times.startedAt || (isTerminal(state) && driver))) {
    attempts.push({ attempt, driverPod, startedAt: times.startedAt, endedAt: null, exitCode: null, memory: memoryOf(resource.spec.config) });
    at = attempts.length - 1;
  } else if (at >= 0 && !attempts[at].startedAt && times.startedAt) {
    attempts[at] = { ...attempts[at], driverPod, startedAt: times.startedAt };
  }
  if (at >= 0 && isTerminal(state) && !attempts[at].endedAt) {
    if (!attempts[at].startedAt && !driver) attempts.splice(at, 1);
    else {
      const end = state === 'KILLED' ? { reason: 'Stopped' as const, exitCode: null, detail: stopDetail(resource) }
        : (driver && kubernetesAttemptEnd(driver, [])) ?? { reason: 'Unknown' as const, exitCode: null, detail: times.detail ?? 'unknown' };
      attempts[at] = endAttempt(attempts[at], end, times.endedAt ?? new Date().toISOString());
    }
  }
  if (attempts.length === 0 && saved.attempt === undefined) return {};
  return { attempt, attempts };
}

/**
 * The status an application should have now. Idempotent: applied to its own result it gives
 * the same status. A terminal status is kept. `missingSince`: the driver pod has not been seen
 * and the grace period for it is over (UNKNOWN); `now` dates transitions the pod gives no time for.
 */
export function desiredStatus(resource: ApplicationResource, driver: DriverView | undefined, runningExecutors: number, options: { missing?: boolean; now?: string } = {}): ApplicationStatus {
  const saved = resource.status ?? {};
  const createdAt = iso(resource.metadata.creationTimestamp) ?? new Date(0).toISOString();
  const transitions: Transition[] = saved.transitions?.length ? [...saved.transitions] : [{ state: 'PENDING', at: createdAt }];
  if (isTerminal(saved.state)) return { ...saved, runningExecutors: 0, transitions };
  const now = options.now ?? new Date().toISOString();
  let next: { state?: ApplicationState; startedAt: string | null; endedAt: string | null; stateDetail?: string };
  if (driver) {
    next = podState(driver);
    if (driver.deleted && !next.state) next = { ...next, state: 'UNKNOWN', stateDetail: 'the driver pod was deleted while its node was not reporting' };
    if (driver.deleted && next.state === 'RUNNING') next = { ...next, state: 'UNKNOWN', endedAt: now, stateDetail: 'the driver pod was deleted while running' };
  } else if (options.missing) {
    // A copied config means a pod was admitted: it went while no watch saw it go (a relist after an error).
    const hadPod = (saved.state && saved.state !== 'PENDING') || Object.keys(resource.spec.config ?? {}).length > 0;
    next = { state: 'UNKNOWN', startedAt: saved.startedAt ?? null, endedAt: null, stateDetail: hadPod ? 'the driver pod is gone' : 'no driver pod was created for this application' };
  } else {
    next = { state: saved.state ?? 'PENDING', startedAt: saved.startedAt ?? null, endedAt: saved.endedAt ?? null, stateDetail: saved.stateDetail ?? 'waiting for the driver pod' };
  }
  // A stop request ends the run, unless the pod had ended by itself first (that end is the truth).
  // Before the pod's deletion is judged: the stop deletes the pod, which is no UNKNOWN then.
  const endedByItself = driver !== undefined && !driver.deleted && (next.state === 'COMPLETED' || next.state === 'FAILED');
  if (resource.spec.stopRequested && !endedByItself) {
    next = { state: 'KILLED', startedAt: next.startedAt ?? saved.startedAt ?? null, endedAt: now, stateDetail: stopDetail(resource) };
  }
  const state = next.state ?? saved.state ?? 'PENDING';
  const last = transitions[transitions.length - 1];
  if (last.state !== state) {
    // A run seen only after it ended (the controller was away) still records when it started.
    if (state !== 'RUNNING' && next.startedAt && !transitions.some((t) => t.state === 'RUNNING')) transitions.push({ state: 'RUNNING', at: next.startedAt });
    const at = state === 'RUNNING' ? next.startedAt ?? now : isTerminal(state) ? next.endedAt ?? now : now;
    transitions.push({ state, at, ...(next.stateDetail ? { detail: next.stateDetail } : {}) });
  }
  // A later attempt's start is its own (attempts[]): the application's startedAt stays the first's.
  const startedAt = (saved.attempt ?? 1) > 1 ? saved.startedAt ?? next.startedAt ?? null : next.startedAt ?? saved.startedAt ?? null;
  const endedAt = isTerminal(state) ? next.endedAt ?? now : null;
  const detail = [next.stateDetail ?? (next.state ? undefined : saved.stateDetail), driver && unreadableConfig(driver.pod)].filter(Boolean).join('; ');
  const status: ApplicationStatus = {
    state, startedAt, endedAt,
    runningExecutors: state === 'RUNNING' ? runningExecutors : 0,
    transitions,
    // An attempt starts only by its own pod (a stop while the next attempt waited starts none).
    ...currentAttempts(resource, driver, state, { startedAt: driver ? next.startedAt : null, endedAt, detail: detail || undefined }),
  };
  if (detail) status.stateDetail = detail;
  return status;
}

/** The API's record: the resource and its (desired) status; the config from the driver pod until the controller copied it. */
export function toRecord(resource: ApplicationResource, status: ApplicationStatus, driver: DriverView | undefined): AppRecord {
  const stored = resource.spec.config;
  const config = stored && Object.keys(stored).length > 0 ? stored : (driver && readConfig(driver.pod)) || stored || {};
  const record: AppRecord = {
    appName: resource.metadata.name,
    jobName: resource.spec.jobName,
    configTemplateName: resource.spec.configTemplateName,
    config,
    state: status.state ?? 'PENDING',
    createdAt: iso(resource.metadata.creationTimestamp) ?? new Date(0).toISOString(),
    startedAt: status.startedAt ?? null,
    endedAt: status.endedAt ?? null,
    runningExecutors: status.runningExecutors ?? 0,
    namespace: resource.metadata.namespace ?? '',
    labels: applicationLabels(resource.metadata.labels),
    submittedBy: resource.spec.submittedBy ?? null,
    transitions: status.transitions ?? [],
    ...(status.attempt !== undefined ? { attempt: status.attempt } : {}),
    // As local mode lists them: the attempts that started (the status also holds the next one while it waits).
    ...(status.attempts ? { attempts: status.attempts.filter((a) => a.startedAt) } : {}),
    ...idempotencyOf(resource),
  };
  if (status.stateDetail) record.stateDetail = status.stateDetail;
  return record;
}

/** The Application written before its driver pod: no config yet (the API adds what admission will give, else the controller copies it). */
export function applicationResource(record: Pick<AppRecord, 'appName' | 'namespace' | 'labels' | 'jobName' | 'configTemplateName' | 'submittedBy'>, labels: Record<string, string>): ApplicationResource {
  return {
    apiVersion: 'submission-service.io/v1',
    kind: 'Application',
    metadata: { name: record.appName, namespace: record.namespace, labels: { ...record.labels, ...labels } },
    spec: { jobName: record.jobName, configTemplateName: record.configTemplateName, config: {}, submittedBy: record.submittedBy },
  };
}
