// Waiting for an application to reach a state, however it is read (inject or HTTP).
import { sleep } from './temp.js';

export const TERMINAL = ['COMPLETED', 'FAILED', 'KILLED', 'UNKNOWN'];

export interface Polled { state?: string | null }

/**
 * Reads the app until its state is one of `states` and returns it; fails with the last
 * state seen when the time is up, or when it ends in another terminal state.
 */
export async function waitForState<T extends Polled>(
  read: () => Promise<T>, states: string | string[], { timeoutMs = 60_000, intervalMs = 100 } = {},
): Promise<T> {
  const wanted = Array.isArray(states) ? states : [states];
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined;
  for (;;) {
    last = await read();
    if (last.state && wanted.includes(last.state)) return last;
    if (last.state && TERMINAL.includes(last.state)) {
      throw new Error(`ended ${last.state} while waiting for ${wanted.join('|')}: ${JSON.stringify(last).slice(0, 600)}`);
    }
    if (Date.now() > deadline) throw new Error(`still ${last.state} after ${timeoutMs} ms, waiting for ${wanted.join('|')}`);
    await sleep(intervalMs);
  }
}

/** Polls a condition until it holds; the time limit is a safety net on a loaded machine, never the check. */
export async function until(cond: () => boolean | Promise<boolean>, { timeoutMs = 60_000, intervalMs = 50, what = 'condition' } = {}) {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(intervalMs);
  }
}
