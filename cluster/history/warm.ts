// Warming a run's history as soon as it ended. Spark's History Server replays a run's whole
// event log into its store on the first request for that run's UI, so without this the user's
// first open waits for the replay (a 10,000-task run's 45 MB log: 32 s under load). Asking for
// the run's jobs once the log is closed does that replay while nobody waits for it; the user's
// first open then finds the UI in the server's cache (or its disk store), and a request that
// comes during the replay waits for the same one (the server loads each run once).
import { histogram, METRIC_PREFIX } from '../../lib/metrics.js';
import type { IndexedRun } from './event-log-index.js';
import { untilServed } from './settle.js';

const replays = histogram<'outcome'>({
  name: `${METRIC_PREFIX}history_replay_seconds`,
  help: 'Replays of ended runs into the History Server as they end (the first open waits for no replay), by outcome (ok, failed)',
  labelNames: ['outcome'],
  buckets: [0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
});

/**
 * Logs at least this big are warmed. A smaller one replays in well under a second at its first
 * open, and warming it would start local mode's History Server (a JVM) and fill its cache for
 * runs nobody may open.
 */
export const WARM_BYTES = 1024 * 1024;

export interface HistoryWarmerOptions {
  /** The History Server's address (local mode starts it on first need). */
  server: () => Promise<URL>;
  /** How long one replay may take before it is given up (the History Server goes on with it). */
  replayMs?: number;
  /** At most this many runs wait for their turn; more are left for their first open. */
  maxWaiting?: number;
  log: (message: string) => void;
}

/** Replays ended runs' logs into the History Server, one at a time, so a burst of ends never floods it. */
export class HistoryWarmer {
  private chain: Promise<void> = Promise.resolve();
  private waiting = 0;
  private readonly stop = new AbortController();

  constructor(private readonly options: HistoryWarmerOptions) {}

  /** Queues the run's replay if its log is big enough and complete or no longer written; whether it was queued. */
  warm(run: IndexedRun | undefined): boolean {
    if (!run || run.bytes < WARM_BYTES || this.stop.signal.aborted) return false;
    if (this.waiting >= (this.options.maxWaiting ?? 16)) return false;
    this.waiting++;
    this.chain = this.chain.then(async () => {
      this.waiting--;
      const timer = replays.startTimer();
      try {
        await this.replay(run.sparkAppId);
        timer({ outcome: 'ok' });
      } catch (error) {
        if (this.stop.signal.aborted) return;
        timer({ outcome: 'failed' });
        this.options.log(`could not warm the history of ${run.sparkAppId}: ${(error as Error)?.message ?? String(error)}`);
      }
    });
    return true;
  }

  /** Resolves once every queued replay has ended (tests, benches); each is bounded. */
  idle(): Promise<void> {
    return this.chain;
  }

  close(): void {
    this.stop.abort();
  }

  private async replay(sparkAppId: string): Promise<void> {
    const signal = AbortSignal.any([this.stop.signal, AbortSignal.timeout(this.options.replayMs ?? 300_000)]);
    const server = await this.options.server();
    // Listed first (the server's next scan), else the request below would answer 404 at once.
    await untilServed(server, sparkAppId, { withinMs: 20_000, signal });
    // Any page of the run's UI loads all of it; the jobs list is a small answer.
    const response = await fetch(new URL(`/api/v1/applications/${encodeURIComponent(sparkAppId)}/jobs`, server), { signal });
    await response.body?.cancel();
    if (!response.ok) throw new Error(`the History Server answered ${response.status}`);
  }
}
