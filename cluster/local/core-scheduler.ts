// Local mode's cores and who gets them next: the queue fair between submitters (fair-queue.ts),
// the cores running applications hold, and the loop that starts what fits. Interactive
// applications (kernels) start at once, beside the batch ones (a notebook cannot wait for a batch
// run to end), so they take none of the machine's batch cores; but they hold their cores in their
// key's share for as long as they live, batch ones alike: a key's kernels and batch applications
// together stay within it (fair-queue.ts). A kernel that would pass its key's share waits in the
// queue; the cluster refuses a new one instead (shareRefusal), so its start answers at once.
// Bookkeeping only: what starting means, and what an application is, its owner
// (local-cluster.ts, driver-runs.ts) says.
import { coresWithinShare, FairQueue, keyCoreLimit } from './fair-queue.js';

/** An application as the scheduler weighs it. */
export interface SchedulingView {
  state: string;
  submittedBy: string | null;
  createdAt: string;
  /** Cores it asks for (on this machine). */
  demand: number;
  interactive: boolean;
  /**
   * The key whose share its cores count in, when not its submitter (null: nobody's): a warm
   * pool's kernel, which the gateway's key submitted, counts in the share of the key that claimed it.
   */
  holder?: string | null;
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
  private readonly interactive = new Set<string>(); // running apps that take none of the machine's batch cores

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

  /**
   * Why `appName`, an interactive application just queued, did not start: its key's share is
   * used up (undefined when it started, or is no kernel, or nothing starts now).
   */
  shareRefusal(appName: string): string | undefined {
    const app = this.host.app(appName);
    if (!app?.interactive || app.state !== 'PENDING' || !this.queue.has(appName) || this.host.closed()) return undefined;
    const limit = keyCoreLimit(this.cores, this.keyCoreShare);
    if (limit === undefined || this.withinShare(appName) !== undefined) return undefined;
    const held = this.coresHeldBy(holderOf(app));
    return `This key holds ${held} of the ${limit} cores its share of local mode allows (--key-core-share ${this.keyCoreShare} of ${this.cores} cores; `
      + `its kernels count as well as its applications), and this kernel would run with ${Math.min(app.demand, limit)}. `
      + 'Shut down one of its kernels, or wait for one of its applications to end, then start it again.';
  }

  /**
   * Starts interactive applications at once within their key's share (beside the batch ones),
   * then batch ones in the fair queue's order while their cores fit.
   */
  schedule(): void {
    for (const appName of this.queue.all()) {
      const app = this.host.app(appName);
      if (this.host.closed() || !app || app.state !== 'PENDING' || !app.interactive) continue;
      const cores = this.withinShare(appName);
      if (cores === undefined) continue; // its key's share is used up: it waits like a batch one
      this.queue.remove(appName, true);
      this.begin(appName, cores, app);
    }
    const next = () => this.queue.head(this.coresHeldBy, (_who, name) => this.withinShare(name) !== undefined);
    for (let appName = next(); !this.host.closed() && appName !== undefined; appName = next()) {
      const app = this.host.app(appName);
      if (!app || app.state !== 'PENDING') {
        this.queue.remove(appName);
        continue;
      }
      const cores = this.withinShare(appName) ?? app.demand;
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

  /**
   * Cores the applications of `submitter` hold now, kernels included: whose turn it is in the
   * fair queue, and what is left of its share.
   */
  private readonly coresHeldBy = (submitter: string | null): number => {
    let held = 0;
    for (const [name, cores] of this.running) {
      const app = this.host.app(name);
      if (app && holderOf(app) === submitter) held += cores;
    }
    return held;
  };

  /** Cores `appName` would start with now within its holder's share; undefined while that share is used up. */
  private withinShare(appName: string): number | undefined {
    const app = this.host.app(appName);
    if (!app) return 0; // gone: the loop drops it
    const limit = keyCoreLimit(this.cores, this.keyCoreShare);
    const holder = holderOf(app);
    return coresWithinShare(holder, app.demand, this.coresHeldBy(holder), limit);
  }
}

/** The key whose share an application's cores count in (null: none's). */
function holderOf(app: SchedulingView): string | null {
  return app.holder !== undefined ? app.holder : app.submittedBy;
}
