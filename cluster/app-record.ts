// The record the service keeps of each application: what the API shows, plus where it runs.
// Its own module so that the cluster interface and the change feed both build on it.
import type { Application, ApplicationAttempt, ApplicationState } from '../schemas/index.js';

/** What the service keeps about an application: the API's Application plus where it runs. */
export interface AppRecord extends Required<Pick<Application, 'appName' | 'jobName' | 'configTemplateName' | 'config' | 'state' | 'createdAt'>> {
  stateDetail?: string;
  startedAt: string | null;
  endedAt: string | null;
  runningExecutors: number;
  namespace: string;
  /** The application's own labels (reserved keys excluded), as on its driver pod. */
  labels: Record<string, string>;
  /** Id of the API key that submitted it; null when authentication was off. */
  submittedBy: string | null;
  /** Which attempt the state is about (restartPolicy OnFailure starts more than one); absent: the first. */
  attempt?: number;
  /** Every run of the driver, oldest first (domain/attempts.ts); absent before the first starts. */
  attempts?: ApplicationAttempt[];
  /** Every state entered, oldest first (Kubernetes mode: written by the controller). */
  transitions?: Transition[];
  /**
   * `<scoped key hash>.<body fingerprint>` when submitted with an Idempotency-Key
   * (submit-api/idempotency.ts): kept with the record (local mode) or as the Application's
   * annotation ANNOTATION_IDEMPOTENCY (Kubernetes mode), never shown by the API.
   */
  idempotency?: string;
}

/** The driver pod's and the Application's annotation carrying AppRecord.idempotency. */
export const ANNOTATION_IDEMPOTENCY = 'submission-service/idempotency';

/** The record's `idempotency` field from a driver pod's or an Application's annotations (none: no field). */
export function idempotencyOf(object: { metadata?: { annotations?: Record<string, string> } } | undefined): Pick<AppRecord, 'idempotency'> {
  const mark = object?.metadata?.annotations?.[ANNOTATION_IDEMPOTENCY];
  return mark === undefined ? {} : { idempotency: mark };
}

export interface Transition { state: ApplicationState; at: string; detail?: string }

/** The record after a change; entering a new state adds it to `transitions`, with its time. */
export function applyChange(record: AppRecord, change: Partial<AppRecord>, at = new Date().toISOString()): AppRecord {
  const next = { ...record, ...change };
  if (change.state !== undefined && change.state !== record.state) {
    const entered: Transition = { state: change.state, at, ...(change.stateDetail ? { detail: change.stateDetail } : {}) };
    next.transitions = [...(record.transitions ?? []), entered];
  }
  return next;
}
