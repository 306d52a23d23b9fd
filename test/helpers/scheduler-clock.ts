// A fake clock for the scheduler loop (cluster/schedules/runner.ts): time moves only when a test
// says so, and each timer that falls due on the way runs, with the pass it starts, to its end.
import type { SchedulerClock } from '../../cluster/schedules/runner.js';
import type { WorkQueueOptions } from '../../cluster/kubernetes/work-queue.js';

/** A scheduler loop, or the Schedule controller (cluster/kubernetes/schedule-reconciler.ts). */
interface Idles { idle(): Promise<void> }

export class SchedulerTestClock implements SchedulerClock {
  private timers: { at: number; run: () => void }[] = [];
  constructor(private at: number) {}
  now = () => new Date(this.at);
  setTimer = (run: () => void, ms: number) => { const timer = { at: this.at + ms, run }; this.timers.push(timer); return timer; };
  clearTimer = (handle: unknown) => { this.timers = this.timers.filter((timer) => timer !== handle); };

  /** This clock as a work queue's timers and clock (the Schedule controller's). */
  queueOptions(): WorkQueueOptions {
    return { timers: { set: this.setTimer, clear: this.clearTimer }, now: () => this.at };
  }

  /** Moves to `iso` (or a time in ms), running each timer that falls due on the way, and each pass it starts, to its end. */
  async until(when: string | number, runner: Idles): Promise<void> {
    const end = typeof when === 'number' ? when : Date.parse(when);
    for (;;) {
      await runner.idle();
      const due = this.timers.filter((timer) => timer.at <= end).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.timers = this.timers.filter((timer) => timer !== due);
      this.at = Math.max(this.at, due.at);
      due.run();
    }
    this.at = Math.max(this.at, end);
    await runner.idle();
  }
}
