// A clock moved by hand for the gateway's loops (lib/clock.ts): timers run in time order when
// `advance` passes them, nothing runs on its own, and no test waits for real time.
import type { Clock, TimerHandle } from '../../lib/clock.js';

interface Timer { id: number; at: number; fn: () => void; every?: number }

export class FakeClock implements Clock {
  private time: number;
  private nextId = 1;
  private readonly timers = new Map<number, Timer>();

  /** `start`: the time it begins at (ms; a test whose times meet wall-clock records starts at Date.now()). */
  constructor(start = 1_000_000) { this.time = start; }

  now(): number { return this.time; }
  setTimeout(fn: () => void, ms: number): TimerHandle { return this.add(fn, ms); }
  setInterval(fn: () => void, ms: number): TimerHandle { return this.add(fn, ms, Math.max(1, ms)); }
  clearTimeout(handle: TimerHandle): void { this.timers.delete(handle as number); }
  clearInterval(handle: TimerHandle): void { this.timers.delete(handle as number); }

  /** Timers not yet run (intervals count once). */
  get pending(): number { return this.timers.size; }

  /** Moves time forward by `ms`, running each timer due on the way at its own time. */
  advance(ms: number): void {
    const end = this.time + ms;
    for (;;) {
      const due = [...this.timers.values()].filter((t) => t.at <= end).sort((a, b) => a.at - b.at || a.id - b.id)[0];
      if (!due) break;
      this.time = due.at;
      if (due.every) due.at += due.every;
      else this.timers.delete(due.id);
      due.fn();
    }
    this.time = end;
  }

  private add(fn: () => void, ms: number, every?: number): number {
    const id = this.nextId++;
    this.timers.set(id, { id, at: this.time + Math.max(0, ms), fn, every });
    return id;
  }
}
