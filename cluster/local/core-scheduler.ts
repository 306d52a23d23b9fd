// Local mode's cores and who gets them next: the queue fair between submitters (fair-queue.ts),
// the cores running applications hold, and the loop that starts what fits. Interactive
// applications (kernels) start at once and hold no batch cores. Bookkeeping only: what starting
// means, and what an application is, its owner (local-cluster.ts, driver-runs.ts) says.
import { coresWithinShare, FairQueue, keyCoreLimit } from './fair-queue.js';

/** An application as the scheduler weighs it. */
export interface SchedulingView {
  state: string;
  submittedBy: string | null;
  createdAt: string;
  /** Cores it asks for (on this machine). */
  demand: number;
  interactive: boolean;
}

export interface SchedulerHost {
  /** The application now; undefined once deleted. */
  app(appName: string): SchedulingView | undefined;
  /** Starts it with `cores`, which count as taken from now on. */
  start(appName: string, cores: number): void;
  /** No more starts (the service is closing). */
  closed(): boolean;
}

export class CoreScheduler {
  private readonly queue = new FairQueue();
  private readonly running = new Map<string, number>(); // appName -> cores in use
  private readonly interactive = new Set<string>(); // running apps that hold no batch cores

  constructor(private readonly cores: number, private readonly keyCoreShare: number, private readonly host: SchedulerHost) {}

  has(appName: string): boolean {
    return this.queue.has(appName);
  }

  /** Queues it (in order of creation among its submitter's) without starting anything yet. */
  push(appName: string): void {
    const app = this.host.app(appName);
    if (app) this.queue.push(appName, app.submittedBy, app.createdAt);
  }

  /** Back in the queue at its old turn, then a scheduling pass. */
  requeue(appName: string): void {
    this.push(appName);
    this.schedule();
  }

  /** Out of the queue, unserved (stopped while waiting): its submitter keeps its turn. */
  remove(appName: string): void {
    this.queue.remove(appName);
  }

  /** Counts `cores` as held by `appName` (a start, or a driver found running after a restart). */
  hold(appName: string, cores: number, interactive: boolean): void {
    this.running.set(appName, cores);
    if (interactive) this.interactive.add(appName);
  }

  /** Its cores are free again. */
  release(appName: string): void {
    this.running.delete(appName);
    this.interactive.delete(appName);
  }

  /** Starts interactive applications at once, then batch ones in the fair queue's order while their cores fit. */
  schedule(): void {
    for (const appName of this.queue.all()) {
      const app = this.host.app(appName);
      if (this.host.closed() || !app || app.state !== 'PENDING' || !app.interactive) continue;
      this.queue.remove(appName, true);
      this.begin(appName, app.demand, app);
    }
    const next = () => this.queue.head(this.coresHeldBy, (who, name) => this.withinShare(who, name) !== undefined);
    for (let appName = next(); !this.host.closed() && appName !== undefined; appName = next()) {
      const app = this.host.app(appName);
      if (!app || app.state !== 'PENDING') {
        this.queue.remove(appName);
        continue;
      }
      const cores = this.withinShare(app.submittedBy, appName) ?? app.demand;
      const used = [...this.running].reduce((sum, [name, held]) => sum + (this.interactive.has(name) ? 0 : held), 0);
      if (used > 0 && used + cores > this.cores) return;
      this.queue.remove(appName, true);
      this.begin(appName, cores, app);
    }
  }

  private begin(appName: string, cores: number, app: SchedulingView): void {
    // The cores are taken now, so the scheduling loop counts them before the process exists.
    this.hold(appName, cores, app.interactive);
    this.host.start(appName, cores);
  }

  /** Batch cores the applications of `submitter` hold now: whose turn it is in the fair queue. */
  private readonly coresHeldBy = (submitter: string | null): number => {
    let held = 0;
    for (const [name, cores] of this.running) {
      if (!this.interactive.has(name) && (this.host.app(name)?.submittedBy ?? null) === submitter) held += cores;
    }
    return held;
  };

  /** Cores `appName` would start with now within its key's share; undefined while the key's share is used up. */
  private withinShare(submitter: string | null, appName: string): number | undefined {
    const app = this.host.app(appName);
    if (!app) return 0; // gone: the loop drops it
    const limit = keyCoreLimit(this.cores, this.keyCoreShare);
    return coresWithinShare(submitter, app.demand, this.coresHeldBy(submitter), limit);
  }
}
