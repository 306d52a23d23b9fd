// Warming a run's history as soon as it ended. Spark's History Server replays a run's whole
// event log into its store on the first request for that run's UI, so without this the user's
// first open waits for the replay (a 10,000-task run's 45 MB log: 32 s under load). Asking for
// the run's jobs once the log is closed does that replay while nobody waits for it; the user's
// first open then finds the UI in the server's cache (or its disk store), and a request that
// comes during the replay waits for the same one (the server loads each run once). Listeners
// (the dashboard's page cache) then fetch what people open first. Replays live in the History
// Server's memory only, so a restart of the service warms the runs that ended last again.
import { histogram, METRIC_PREFIX } from '../../lib/metrics.js';
import type { IndexedRun } from './event-log-index.js';
import { untilServed } from './settle.js';
import type { WarmedListener } from './spark-history.js';

const replays = histogram<'outcome'>({
  name: `${METRIC_PREFIX}history_replay_seconds`,
  help: "Warm-ups of ended runs as they end or after a restart (the first open waits for no replay): the History Server's replay and the first pages put in the proxy's cache, by outcome (ok, failed)",
  labelNames: ['outcome'],
  buckets: [0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
});

/**
 * Logs at least this big are warmed. A smaller one replays in well under a second at its first
 * open, and warming it would start local mode's History Server (a JVM) and fill its cache for
 * runs nobody may open.
 */
export const WARM_BYTES = 1024 * 1024;

/** At a start, the runs warmed again: at most this many, ended at most this long ago. */
export const REWARM = { count: 8, withinMs: 24 * 60 * 60 * 1000 };

/**
 * The runs to warm again at a start, most recently ended first: complete logs big enough to be
 * warmed, ended within `withinMs` of `now`, at most `count`.
 */
export function recentRuns(runs: Iterable<[string, IndexedRun]>, now: number, limits = REWARM): Array<[string, IndexedRun]> {
  return [...runs]
    .filter(([, run]) => run.completed && run.bytes >= WARM_BYTES && now - run.modifiedMs <= limits.withinMs)
    .sort(([, a], [, b]) => b.modifiedMs - a.modifiedMs)
    .slice(0, limits.count);
}

export interface HistoryWarmerOptions {
  /** The History Server's address (local mode starts it on first need). */
  server: () => Promise<URL>;
  /** Headers every request to it must carry (local mode's gate secret). */
  headers?: Readonly<Record<string, string>>;
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
  private readonly listeners = new Set<WarmedListener>();

  constructor(private readonly options: HistoryWarmerOptions) {}

  /** Called after each replay, in turn, before the next run's (bounded like the replay). */
  onWarmed(listener: WarmedListener): () => void {
    this.listeners.add(listener);
    return () => { this.listeners.delete(listener); };
  }

  /** At a start: queues the runs that ended last (`recentRuns`, REWARM), most recent first. */
  warmRecent(runs: Iterable<[string, IndexedRun]>): void {
    for (const [appName, run] of recentRuns(runs, Date.now())) this.warm(appName, run);
  }

  /** Queues the run's replay if its log is big enough and complete or no longer written; whether it was queued. */
  warm(appName: string, run: IndexedRun | undefined): boolean {
    if (!run || run.bytes < WARM_BYTES || this.stop.signal.aborted) return false;
    if (this.waiting >= (this.options.maxWaiting ?? 16)) return false;
    this.waiting++;
    this.chain = this.chain.then(async () => {
      this.waiting--;
      const timer = replays.startTimer();
      try {
        const signal = this.signal();
        const server = await this.replay(run.sparkAppId, signal);
        for (const listener of this.listeners) {
          await listener(appName, { server, sparkAppId: run.sparkAppId, headers: this.options.headers }, signal).catch((error: unknown) => {
            if (!this.stop.signal.aborted) this.options.log(`could not fill the page cache of ${appName}: ${(error as Error)?.message ?? String(error)}`);
          });
        }
        // Counted once the listeners are done too: a test waiting for it finds the pages in place.
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

  private signal(): AbortSignal {
    return AbortSignal.any([this.stop.signal, AbortSignal.timeout(this.options.replayMs ?? 300_000)]);
  }

  private async replay(sparkAppId: string, signal: AbortSignal): Promise<URL> {
    const server = await this.options.server();
    // Listed first (the server's next scan), else the request below would answer 404 at once.
    const { headers } = this.options;
    await untilServed(server, sparkAppId, { withinMs: 20_000, signal, headers });
    // Any page of the run's UI loads all of it; the jobs list is a small answer.
    const response = await fetch(new URL(`/api/v1/applications/${encodeURIComponent(sparkAppId)}/jobs`, server), { headers, signal });
    await response.body?.cancel();
    if (!response.ok) throw new Error(`the History Server answered ${response.status}`);
    return server;
  }
}
