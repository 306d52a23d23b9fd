// Where schedules are kept: files in local mode (file-schedule-store.ts), Schedule custom
// resources in Kubernetes mode (cluster/kubernetes/schedule-store.ts). The API and the
// scheduler loop (runner.ts) see only this interface.
import type { Schedule } from '../../schemas/index.js';

/** What the scheduler writes after each tick it settles. */
export interface ScheduleStatus {
  /** ISO time of the last tick acted upon (run, skipped or missed); null before the first. */
  lastScheduleTime: string | null;
  lastRunName: string | null;
  lastOutcome: string | null;
}

export interface StoredSchedule {
  spec: Schedule;
  /** Id of the key that created it (its runs are submitted as that key); null with authentication off. */
  createdBy: string | null;
  createdAt: string;
  status: ScheduleStatus;
}

export const emptyStatus = (): ScheduleStatus => ({ lastScheduleTime: null, lastRunName: null, lastOutcome: null });

export interface ScheduleStore {
  list(): Promise<StoredSchedule[]>;
  get(name: string): Promise<StoredSchedule | undefined>;
  /** Fails with ConflictError when the name is taken. */
  create(schedule: StoredSchedule): Promise<StoredSchedule>;
  /** A new spec; owner, creation time and status stay. Fails with NotFoundError when absent. */
  replace(spec: Schedule): Promise<StoredSchedule>;
  /** False when absent. */
  delete(name: string): Promise<boolean>;
  /** The scheduler's record of a tick; a schedule deleted meanwhile stays deleted. */
  setStatus(name: string, status: ScheduleStatus): Promise<void>;
}
