// The Schedule controller of Kubernetes mode, a controller of the manager (manager.ts): one key
// ("schedules") on the same rate-limited work queue type as the others, whose pass is one pass
// of the scheduler loop (cluster/schedules/runner.ts) over the Schedule resources and asks for
// the next pass at the earliest next tick (at most `resyncMs` away, for changes made through
// other replicas). Run only by the replica holding the Lease, checking before every create and
// write that it still leads. Exactly one run per tick across a leader change: the run's names
// derive from the tick, so a new leader redoing a tick its predecessor made meets that run
// (409, and the run's labels and owner prove it is) and only records it. A failed pass (the store unreadable) is retried after its backoff.
import type { Cluster } from '../cluster.js';
import { realClock, ScheduleRunner, type SchedulerClock, type SchedulerLog, type TickAdmission } from '../schedules/runner.js';
import type { ScheduleStore } from '../schedules/schedule-store.js';
import { Controller, type ReconcileContext, type ReconcileResult } from './controller.js';
import type { Registration } from './manager.js';
import type { WorkQueueOptions } from './work-queue.js';

/** The controller's one key: every pass looks at every Schedule. */
export const SCHEDULES_KEY = 'schedules';

export interface ScheduleReconcilerOptions {
  store: ScheduleStore;
  cluster: Pick<Cluster, 'createDriver' | 'get' | 'list' | 'stop' | 'delete'>;
  mayWrite: () => boolean;
  log?: SchedulerLog;
  /** The ticks' clock (wall time). */
  clock?: SchedulerClock;
  /** Schedules are read again at least this often (changes through other replicas; default 10 s). */
  resyncMs?: number;
  /** The work queue's timers and clock (tests pass fake ones). */
  queue?: WorkQueueOptions;
}

export class ScheduleReconciler {
  readonly controller: Controller;
  private readonly runner: ScheduleRunner;
  private context?: ReconcileContext;
  private pass?: Promise<unknown>;

  constructor(private readonly options: ScheduleReconcilerOptions) {
    const { store, cluster, log, clock } = options;
    // Never started: its passes are the controller's.
    this.runner = new ScheduleRunner({ store, cluster, log, clock, mayWrite: () => this.context?.mayWrite() ?? false });
    this.controller = new Controller({
      // Each pass asks for the next (requeueAfterMs); the controller's own resync (5 min) is only a safety net.
      name: 'schedules', workers: 1, keys: () => [SCHEDULES_KEY], mayWrite: options.mayWrite, queue: options.queue,
      reconcile: (_key, context) => this.reconcile(context),
      onError: (_key, error, retryMs) => log?.('error', `scheduler pass failed (again in ${retryMs} ms): ${(error as Error)?.message ?? String(error)}`),
    });
  }

  /** Each tick is first admitted by the owner key's limits (the API's, built after this controller). */
  admitTicksWith(admit: TickAdmission): void {
    this.runner.admitTicksWith(admit);
  }

  /** What the manager needs: no cache changes to route (a change through this replica calls `wake`). */
  get registration(): Registration {
    return { controller: this.controller };
  }

  /** A schedule changed through this replica: a pass now (when leading). */
  wake(): void {
    this.controller.enqueue(SCHEDULES_KEY);
  }

  /** Resolves once no pass is queued or in flight (a pass asked for later may wait; tests). */
  async idle(): Promise<void> {
    for (;;) {
      await new Promise<void>((ok) => setImmediate(ok));
      if (this.pass) { await this.pass; continue; }
      if (!this.controller.queue?.length) return;
    }
  }

  private get resyncMs(): number {
    return this.options.resyncMs ?? 10_000;
  }

  private async reconcile(context: ReconcileContext): Promise<ReconcileResult> {
    if (!context.mayWrite()) return undefined;
    this.context = context;
    const pass = this.runner.runOnce();
    this.pass = pass;
    let next: Date | null;
    try {
      next = await pass;
    } finally {
      if (this.pass === pass) this.pass = undefined;
    }
    const now = (this.options.clock ?? realClock).now().getTime();
    return { requeueAfterMs: next ? Math.min(this.resyncMs, Math.max(0, next.getTime() - now)) : this.resyncMs };
  }
}
