// The Schedule controller of Kubernetes mode: the scheduler loop (cluster/schedules/runner.ts)
// over Schedule resources, run only by the replica holding the Lease, checking before every
// create and write that it still leads. Exactly one run per tick across a leader change: the
// run's name derives from the tick, so a new leader redoing a tick its predecessor made meets
// that run (409) and only records it.
//
// Written as a reconciler with activate/deactivate, so that it can be registered with the
// controller's manager; until then KubernetesCluster starts it through `leaderTasks`.
import type { Cluster } from '../cluster.js';
import { ScheduleRunner, type SchedulerClock, type SchedulerLog, type TickAdmission } from '../schedules/runner.js';
import type { ScheduleStore } from '../schedules/schedule-store.js';

export interface LeaderTask {
  /** This replica leads: start. */
  activate(): void;
  /** No longer the leader: stop writing at once. */
  deactivate(): void;
}

export interface ScheduleReconcilerOptions {
  store: ScheduleStore;
  cluster: Pick<Cluster, 'createDriver' | 'list' | 'stop' | 'delete'>;
  mayWrite: () => boolean;
  log?: SchedulerLog;
  clock?: SchedulerClock;
  /** Schedules are read again at least this often (changes through other replicas; default 10 s). */
  resyncMs?: number;
}

export class ScheduleReconciler implements LeaderTask {
  private runner?: ScheduleRunner;
  private admit?: TickAdmission;

  constructor(private readonly options: ScheduleReconcilerOptions) {}

  /** Each tick is first admitted by the owner key's limits (the API's, built after this controller). */
  admitTicksWith(admit: TickAdmission): void {
    this.admit = admit;
    this.runner?.admitTicksWith(admit);
  }

  activate(): void {
    if (this.runner) return;
    const { store, cluster, mayWrite, log, clock, resyncMs } = this.options;
    this.runner = new ScheduleRunner({ store, cluster, mayWrite, log, clock, maxSleepMs: resyncMs ?? 10_000, admit: this.admit });
    this.runner.start();
  }

  deactivate(): void {
    void this.runner?.stop();
    this.runner = undefined;
  }

  /** A schedule changed through this replica: a pass now (when leading). */
  wake(): void {
    this.runner?.wake();
  }

  async close(): Promise<void> {
    await this.runner?.stop();
    this.runner = undefined;
  }
}
