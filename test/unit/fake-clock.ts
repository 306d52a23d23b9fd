// A fake clock for the unit tests of the Kubernetes-mode loops: Node's own mock timers
// (node:test's MockTimers) stand in for setTimeout, both the global one and node:timers/promises',
// and `now` is the monotonic clock handed to the class under test. Nothing waits for real time.
import { mock } from 'node:test';

export interface FakeClock {
  /** The fake monotonic clock, in ms. */
  now: () => number;
  /** Moves time on by `ms` in steps, running what falls due and letting the promises it starts settle. */
  advance: (ms: number, step?: number) => Promise<void>;
  /** Lets pending promise chains run (no time passes). */
  settle: () => Promise<void>;
  restore: () => void;
}

/** A few turns of the event loop: fake apiserver calls resolve at once, but through several awaits. */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise<void>((ok) => setImmediate(ok));
}

export function installFakeClock(): FakeClock {
  mock.timers.enable({ apis: ['setTimeout'] });
  let now = 1_000_000;
  return {
    now: () => now,
    settle,
    async advance(ms: number, step = 100) {
      for (let left = ms; left > 0; left -= step) {
        const by = Math.min(step, left);
        now += by;
        mock.timers.tick(by);
        await settle();
      }
    },
    restore: () => mock.timers.reset(),
  };
}
