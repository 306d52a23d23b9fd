// The controller's work queue, with the guarantees of client-go's (util/workqueue): a queue
// plus a *dirty* set (keys waiting) and a *processing* set (keys a worker holds).
// - `add` of a key already waiting does nothing: a burst of events collapses into one pass.
// - `add` of a key being processed only marks it dirty; `done` queues it again. So no two
//   workers ever hold the same key, and a change seen mid-pass is never lost.
// - `addRateLimited` queues a failed key after its own exponential backoff (with jitter,
//   capped); `forget` resets it after a success. One failing key never slows the others.
// Hand-written: no maintained JavaScript package offers this (dedup, one-in-flight per key,
// per-item backoff); the available queues are job runners (concurrency, not keys) or
// abandoned. It is small and has its own unit tests (test/controller/work-queue.test.ts).

/** Where timers come from: real ones by default, a fake clock in tests. */
export interface Timers {
  set(run: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

const realTimers: Timers = {
  set: (run, ms) => { const timer = setTimeout(run, ms); timer.unref(); return timer; },
  clear: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

export interface BackoffOptions {
  /** The first retry's delay (default 100 ms); it doubles with each failure in a row. */
  baseMs?: number;
  /** The cap (default 60 s). */
  maxMs?: number;
  /** Each delay is scaled by a factor drawn from [1 − jitter, 1] (default 0.5), so retries of many keys spread out. */
  jitter?: number;
  random?: () => number;
}

/** The delay before retry number `failures + 1` (pure; `random` injected). */
export function backoffDelay(failures: number, options: BackoffOptions = {}): number {
  const base = options.baseMs ?? 100;
  const max = options.maxMs ?? 60_000;
  const jitter = options.jitter ?? 0.5;
  const raw = Math.min(max, base * 2 ** Math.min(failures, 40));
  return Math.round(raw * (1 - jitter * (options.random ?? Math.random)()));
}

export interface WorkQueueOptions extends BackoffOptions {
  timers?: Timers;
  /** A monotonic clock in ms (default performance.now), to tell which of two delayed adds is sooner. */
  now?: () => number;
}

export class WorkQueue<K = string> {
  private readonly order: K[] = [];
  private readonly dirty = new Set<K>();
  private readonly processing = new Set<K>();
  private readonly failures = new Map<K, number>();
  private readonly delayed = new Map<K, { handle: unknown; at: number }>();
  private readonly getters: ((key: K | undefined) => void)[] = [];
  private readonly timers: Timers;
  private stopped = false;

  constructor(private readonly options: WorkQueueOptions = {}) {
    this.timers = options.timers ?? realTimers;
  }

  /** Keys waiting for a worker. */
  get length(): number {
    return this.order.length;
  }

  /** Keys waiting, held by a worker, or waiting out a delay. */
  get busy(): boolean {
    return this.order.length > 0 || this.processing.size > 0 || this.delayed.size > 0;
  }

  get shuttingDown(): boolean {
    return this.stopped;
  }

  add(key: K): void {
    if (this.stopped || this.dirty.has(key)) return;
    this.dirty.add(key);
    if (this.processing.has(key)) return; // done() queues it again
    const getter = this.getters.shift();
    if (getter) this.hand(key, getter);
    else this.order.push(key);
  }

  /** Adds the key after `ms` (an earlier pending add of the same key wins). */
  addAfter(key: K, ms: number): void {
    if (this.stopped) return;
    if (ms <= 0) return this.add(key);
    const at = (this.options.now ? this.options.now() : performance.now()) + ms;
    const pending = this.delayed.get(key);
    if (pending && pending.at <= at) return;
    if (pending) this.timers.clear(pending.handle);
    const handle = this.timers.set(() => { this.delayed.delete(key); this.add(key); }, ms);
    this.delayed.set(key, { handle, at });
  }

  /** A failed key: again after its backoff, which grows with each failure in a row. */
  addRateLimited(key: K): number {
    const failures = this.failures.get(key) ?? 0;
    this.failures.set(key, failures + 1);
    const ms = backoffDelay(failures, this.options);
    this.addAfter(key, ms);
    return ms;
  }

  /** A success: the next failure of this key starts from the base delay again. */
  forget(key: K): void {
    this.failures.delete(key);
  }

  /** Failures in a row of this key. */
  retries(key: K): number {
    return this.failures.get(key) ?? 0;
  }

  /** The next key, held until `done`; undefined once the queue is shut down. */
  get(): Promise<K | undefined> {
    if (this.stopped) return Promise.resolve(undefined);
    const key = this.order.shift();
    if (key !== undefined) {
      this.dirty.delete(key);
      this.processing.add(key);
      return Promise.resolve(key);
    }
    return new Promise((ok) => this.getters.push(ok));
  }

  /** The worker is finished with `key`; if it was added meanwhile it is queued again. */
  done(key: K): void {
    this.processing.delete(key);
    if (this.stopped || !this.dirty.has(key)) return;
    this.dirty.delete(key);
    this.add(key);
  }

  /** Drops everything waiting, cancels delays, and answers every `get` with undefined. */
  shutDown(): void {
    this.stopped = true;
    for (const { handle } of this.delayed.values()) this.timers.clear(handle);
    this.delayed.clear();
    this.order.length = 0;
    this.dirty.clear();
    for (const getter of this.getters.splice(0)) getter(undefined);
  }

  private hand(key: K, getter: (key: K) => void): void {
    this.dirty.delete(key);
    this.processing.add(key);
    getter(key);
  }
}
