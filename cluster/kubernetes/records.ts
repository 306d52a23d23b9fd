// Application records on Kubernetes: an Application custom resource keeps what must
// outlive the driver pod; the live state is read from the pod while it exists.
import type { V1Pod } from '@kubernetes/client-node';
import type { ApplicationConfig, ApplicationState } from '../../schemas/index.js';
import { applicationLabels } from '../../webhook/domain/index.js';
import { type AppRecord, isTerminal } from '../cluster.js';

export interface ApplicationResource {
  apiVersion: string;
  kind: 'Application';
  metadata: { name: string; namespace?: string; creationTimestamp?: string | Date; labels?: Record<string, string>; resourceVersion?: string };
  spec: { jobName: string; configTemplateName: string; config: ApplicationConfig; submittedBy?: string | null };
  status?: { state?: ApplicationState; stateDetail?: string; startedAt?: string | null; endedAt?: string | null; runningExecutors?: number };
}


const iso = (value: string | Date | undefined | null): string | null =>
  value === undefined || value === null ? null : new Date(value).toISOString();

const PHASES: Record<string, ApplicationState> = {
  Pending: 'PENDING', Running: 'RUNNING', Succeeded: 'COMPLETED', Failed: 'FAILED', Unknown: 'UNKNOWN',
};

/** State and times as the driver pod shows them. */
export function podState(pod: V1Pod): Pick<AppRecord, 'state' | 'startedAt' | 'endedAt'> & { stateDetail?: string } {
  const container = pod.status?.containerStatuses?.[0]?.state;
  const terminated = container?.terminated;
  const state = PHASES[pod.status?.phase ?? 'Pending'] ?? 'UNKNOWN';
  return {
    state,
    startedAt: iso(container?.running?.startedAt ?? terminated?.startedAt ?? (state === 'RUNNING' ? pod.status?.startTime : undefined)),
    endedAt: iso(terminated?.finishedAt),
    stateDetail: terminated ? `exit code ${terminated.exitCode}${terminated.reason ? ` (${terminated.reason})` : ''}` : pod.status?.reason,
  };
}

/** The record: persisted terminal state wins; otherwise the pod's; no pod and no end means UNKNOWN. */
export function toRecord(resource: ApplicationResource, pod: V1Pod | undefined, runningExecutors: number): AppRecord {
  const saved = resource.status ?? {};
  const base = {
    appName: resource.metadata.name,
    jobName: resource.spec.jobName,
    configTemplateName: resource.spec.configTemplateName,
    config: resource.spec.config,
    createdAt: iso(resource.metadata.creationTimestamp) ?? new Date(0).toISOString(),
    namespace: resource.metadata.namespace ?? '',
    labels: applicationLabels(resource.metadata.labels),
    submittedBy: resource.spec.submittedBy ?? null,
  };
  if (isTerminal(saved.state)) {
    return { ...base, state: saved.state!, stateDetail: saved.stateDetail, startedAt: saved.startedAt ?? null, endedAt: saved.endedAt ?? null, runningExecutors: 0 };
  }
  if (!pod) {
    return { ...base, state: 'UNKNOWN', stateDetail: 'the driver pod is gone', startedAt: saved.startedAt ?? null, endedAt: null, runningExecutors: 0 };
  }
  const live = podState(pod);
  return { ...base, ...live, runningExecutors: live.state === 'RUNNING' ? runningExecutors : 0 };
}

export function applicationResource(record: AppRecord, labels: Record<string, string>): ApplicationResource {
  return {
    apiVersion: 'submission-service.io/v1',
    kind: 'Application',
    metadata: { name: record.appName, namespace: record.namespace, labels: { ...record.labels, ...labels } },
    spec: { jobName: record.jobName, configTemplateName: record.configTemplateName, config: record.config, submittedBy: record.submittedBy },
    status: { state: record.state },
  };
}
