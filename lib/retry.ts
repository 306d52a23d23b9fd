// The one retry loop: run, and on an error the caller calls transient, wait and run again,
// up to a number of attempts; anything else, or the last failure, is thrown as it came.
// Used for optimistic-concurrency conflicts (409 on a conditional write) and for
// reconnections; a caller never writes its own `for (attempt…)` loop.
import { setTimeout as sleep } from 'node:timers/promises';

export interface RetryOptions {
  /** Total runs, the first included (default 5). */
  attempts?: number;
  /** Whether this error is worth another run (default: every error). */
  retryOn?: (error: unknown) => boolean;
  /** Wait before run `attempt + 1` (default: backoff()). */
  delayMs?: (attempt: number) => number;
  /** Ends the waiting (and the loop) early: the abort reason is thrown. */
  signal?: AbortSignal;
}

/**
 * Exponential backoff with full jitter: a random wait in [0, min(max, base × 2^(attempt-1))],
 * so writers that collided once do not collide again in step.
 */
export const backoff = ({ baseMs = 20, maxMs = 5_000 }: { baseMs?: number; maxMs?: number } = {}) =>
  (attempt: number): number => Math.random() * Math.min(maxMs, baseMs * 2 ** (attempt - 1));

export async function retry<T>(run: (attempt: number) => Promise<T>, options: RetryOptions = {}): Promise<T> {
  const attempts = options.attempts ?? 5;
  const delay = options.delayMs ?? backoff();
  for (let attempt = 1; ; attempt++) {
    options.signal?.throwIfAborted();
    try {
      return await run(attempt);
    } catch (error) {
      if (attempt >= attempts || !(options.retryOn?.(error) ?? true)) throw error;
    }
    const wait = delay(attempt);
    if (wait > 0) {
      try {
        await sleep(wait, undefined, { signal: options.signal });
      } catch (error) {
        options.signal?.throwIfAborted(); // the caller's reason, not node's AbortError
        throw error;
      }
    }
  }
}
