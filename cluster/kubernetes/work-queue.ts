// The controller's work queue, with the guarantees of client-go's (util/workqueue): a queue
// plus a *dirty* set (keys waiting) and a *processing* set (keys a worker holds).
// - `add` of a key already waiting does nothing: a burst of events collapses into one pass.
// - `add` of a key being processed only marks it dirty; `done` queues it again. So no two
//   workers ever hold the same key, and a change seen mid-pass is never lost.
// - `addRateLimited` queues a failed key after its own exponential backoff (with jitter,
//   capped); `forget` resets it after a success. One failing key never slows the others.
//   Retries of all keys together also pass an overall token bucket (client-go's
//   MaxOfRateLimiter of both): a storm of failures costs at most `qps` retries a second.
// Every controller of the manager (manager.ts) runs on one of these.
// Hand-written: no maintained JavaScript package offers this (dedup, one-in-flight per key,
// per-item backoff); the available queues are job runners (concurrency, not keys) or
// abandoned. It is small and has its own unit tests (test/unit/work-queue.test.ts).

/** Where timers come from: real ones by default, a fake clock in tests. */
export interface Timers {
  set(run: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

export const realTimers: Timers = {
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

/** The overall limit of retries (client-go's BucketRateLimiter; its defaults 10/s, burst 100). */
export interface BucketOptions {
  /** Tokens added a second (default 10). */
  qps?: number;
  /** Tokens the bucket holds (default 100). */
  burst?: number;
}

/**
 * A token bucket that hands out reservations: each call takes one token and says how long
 * to wait for it (0 while tokens are left). Pure but for its own state; time is given.
 */
export class TokenBucket {
  private tokens: number;
  private last: number | undefined;

  constructor(private readonly options: BucketOptions = {}) {
    this.tokens = options.burst ?? 100;
  }

  /** The wait (ms) before the token taken now may be used. */
  reserve(now: number): number {
    const qps = this.options.qps ?? 10;
    const burst = this.options.burst ?? 100;
    if (this.last !== undefined) this.tokens = Math.min(burst, this.tokens + ((now - this.last) * qps) / 1000);
    this.last = now;
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : Math.ceil((-this.tokens * 1000) / qps);
  }
}

export interface WorkQueueOptions extends BackoffOptions {
  /** The overall retry limit, on top of each key's backoff. */
  bucket?: BucketOptions;
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
  private readonly bucket: TokenBucket;
  private stopped = false;

  constructor(private readonly options: WorkQueueOptions = {}) {
    this.timers = options.timers ?? realTimers;
    this.bucket = new TokenBucket(options.bucket);
  }

  private now(): number {
    return this.options.now ? this.options.now() : performance.now();
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
    const at = this.now() + ms;
    const pending = this.delayed.get(key);
    if (pending && pending.at <= at) return;
    if (pending) this.timers.clear(pending.handle);
    const handle = this.timers.set(() => { this.delayed.delete(key); this.add(key); }, ms);
    this.delayed.set(key, { handle, at });
  }

  /** A failed key: again after its backoff, which grows with each failure in a row (and after a token of the overall bucket). */
  addRateLimited(key: K): number {
    const failures = this.failures.get(key) ?? 0;
    this.failures.set(key, failures + 1);
    const ms = Math.max(backoffDelay(failures, this.options), this.bucket.reserve(this.now()));
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
