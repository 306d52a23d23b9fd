// A check that runs every so often and whenever it is poked, never two at once: a poke while one
// runs asks for one more run after it (not one per poke). The kernels' and the Connect servers'
// warm pools top themselves up this way.
import type { FastifyBaseLogger } from 'fastify';
import { type Clock, systemClock, type TimerHandle } from './clock.js';

export interface SerialCheckOptions {
  everyMs: number;
  log: FastifyBaseLogger;
  /** What the log says when a run fails. */
  failure: string;
  clock?: Clock;
  /** After each run, failed or not (a metric). */
  ran?: () => void;
}

export class SerialCheck {
  private timer: TimerHandle | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private isClosed = false;
  private readonly clock: Clock;

  constructor(private readonly run: () => Promise<void>, private readonly options: SerialCheckOptions) {
    this.clock = options.clock ?? systemClock;
  }

  get closed(): boolean { return this.isClosed; }

  /** Runs now, then every `everyMs`. */
  open(): void {
    this.timer = this.clock.setInterval(() => this.poke(), this.options.everyMs);
    this.poke();
  }

  poke(): void {
    if (this.isClosed) return;
    if (this.running) { this.again = true; return; }
    this.running = this.run()
      .catch((error: Error) => this.options.log.error({ err: error }, this.options.failure))
      .finally(() => {
        this.options.ran?.();
        this.running = undefined;
        if (this.again) { this.again = false; this.poke(); }
      });
  }

  /** No more runs; resolves once the one under way has ended. */
  async close(): Promise<void> {
    this.isClosed = true;
    if (this.timer !== undefined) this.clock.clearInterval(this.timer);
    await this.running;
  }
}
