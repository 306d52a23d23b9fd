// One controller of the manager (manager.ts): a reconcile function "make the world match for
// this key" on its own rate-limited work queue (work-queue.ts), run only while this replica
// leads. Each leadership term has its queue, its workers, its resync timer and an AbortSignal
// that ends its calls; a new term starts only once the workers of the last one have finished.
// The reconcile function never sleeps: it returns "requeue after", or throws to be retried
// after the key's backoff.
import { realTimers, WorkQueue, type WorkQueueOptions } from './work-queue.js';

/** What one pass over a key gets from its controller. */
export interface ReconcileContext {
  /** Aborted when the term ends (leadership lost, or shutdown). */
  signal: AbortSignal;
  /** Checked right before every write: false once this replica no longer leads. */
  mayWrite: () => boolean;
}

/** What a pass asks for: nothing (done until the next event), or another pass after a delay. */
export type ReconcileResult = void | { requeueAfterMs: number };

export interface ControllerOptions {
  /** The controller's name, in logs and metrics. */
  name: string;
  reconcile: (key: string, context: ReconcileContext) => Promise<ReconcileResult>;
  /** Every key the controller owns now: queued at the start of a term and at every resync. */
  keys: () => Iterable<string>;
  /** Concurrent passes (of different keys; default 4). */
  workers?: number;
  /** Every key is queued again this often, so a missed event heals (default 5 min). */
  resyncMs?: number;
  /** Runs at every resync, before the keys are queued (e.g. to drop what belongs to vanished keys). */
  onResync?: () => void;
  /** Per-key backoff, overall bucket, timers and clock (tests pass a fake clock). */
  queue?: WorkQueueOptions;
  /** A failure, as it is retried. */
  onError?: (key: string, error: unknown, retryMs: number, retries: number) => void;
  /** The queue's length after each change (a gauge). */
  onLength?: (length: number) => void;
  mayWrite?: () => boolean;
}

interface Term {
  queue: WorkQueue<string>;
  abort: AbortController;
  workers: Promise<void>[];
  resync?: { stop(): void };
}

export class Controller {
  private term?: Term;
  private previous: Promise<unknown> = Promise.resolve();
  private idle: (() => void)[] = [];

  constructor(readonly options: ControllerOptions) {}

  get name(): string {
    return this.options.name;
  }

  /** The queue of the current term (undefined while not leading). */
  get queue(): WorkQueue<string> | undefined {
    return this.term?.queue;
  }

  get active(): boolean {
    return this.term !== undefined;
  }

  /** Leader: every key once, then every change, and every key again at each resync. */
  activate(): void {
    if (this.term) return;
    const term: Term = { queue: new WorkQueue<string>(this.options.queue), abort: new AbortController(), workers: [] };
    this.term = term;
    this.queueAll(term);
    term.resync = this.every(() => { this.options.onResync?.(); this.queueAll(term); }, this.options.resyncMs ?? 300_000);
    void this.previous.then(() => {
      if (term.abort.signal.aborted) return;
      for (let i = 0; i < (this.options.workers ?? 4); i++) term.workers.push(this.work(term));
    });
  }

  /** No longer the leader: calls in flight are aborted, the queue is dropped. */
  deactivate(): void {
    const term = this.term;
    if (!term) return;
    this.term = undefined;
    term.resync?.stop();
    term.abort.abort();
    term.queue.shutDown();
    this.options.onLength?.(0);
    this.previous = Promise.resolve().then(() => Promise.all(term.workers));
    for (const ok of this.idle.splice(0)) ok();
  }

  /** Resolves once the last term's workers have finished (shutdown). */
  async stopped(): Promise<void> {
    await this.previous;
  }

  enqueue(key: string): void {
    this.term?.queue.add(key);
  }

  /** Resolves when nothing is queued, in flight or waiting out a delay. */
  drained(): Promise<void> {
    if (!this.term?.queue.busy) return Promise.resolve();
    return new Promise((ok) => this.idle.push(ok));
  }

  private queueAll(term: Term): void {
    for (const key of this.options.keys()) term.queue.add(key);
    this.options.onLength?.(term.queue.length);
  }

  /** The resync timer: a timeout re-armed after each run, on the queue's timers (a fake clock in tests). */
  private every(run: () => void, ms: number): { stop(): void } {
    const timers = this.options.queue?.timers ?? realTimers;
    let handle: unknown;
    const arm = () => { handle = timers.set(() => { run(); arm(); }, ms); };
    arm();
    return { stop: () => timers.clear(handle) };
  }

  private async work(term: Term): Promise<void> {
    const { queue } = term;
    const context: ReconcileContext = { signal: term.abort.signal, mayWrite: () => !term.abort.signal.aborted && (this.options.mayWrite?.() ?? true) };
    for (;;) {
      const key = await queue.get();
      if (key === undefined) return;
      this.options.onLength?.(queue.length);
      try {
        const result = await this.options.reconcile(key, context);
        queue.forget(key);
        if (result && result.requeueAfterMs >= 0) queue.addAfter(key, result.requeueAfterMs);
      } catch (error) {
        if (!queue.shuttingDown) {
          const ms = queue.addRateLimited(key);
          this.options.onError?.(key, error, ms, queue.retries(key));
        }
      } finally {
        queue.done(key);
        if (!queue.busy) for (const ok of this.idle.splice(0)) ok();
      }
    }
  }
}
