// The waits both history back ends share (local files, object storage): a run that just ended
// is found by reading its event logs again, and then served once Spark's History Server has
// picked it up at its own next scan. Bounded: past the deadline the caller gets what there is.
import { writesEventLog } from '../../domain/index.js';
import type { IndexedRun } from './event-log-index.js';

const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));

/** What settleRun reads: an index of event logs (event-log-index.ts, s3-event-log-index.ts). */
export interface RunIndex {
  refresh(): Promise<void>;
  lookup(appName: string): IndexedRun | undefined;
}

/** Time as settleRun sees it: the process's, or a fake one in the unit tests. */
export interface SettleClock {
  now(): number;
  sleep(ms: number): Promise<unknown>;
}

const processClock: SettleClock = { now: () => Date.now(), sleep };

/** Reads the logs again until `appName`'s run is found complete, for up to `withinMs`; the run as last seen. */
export async function settleRun(index: RunIndex, appName: string, options: { withinMs: number; everyMs: number; signal?: AbortSignal; clock?: SettleClock }): Promise<IndexedRun | undefined> {
  const clock = options.clock ?? processClock;
  const deadline = clock.now() + options.withinMs;
  for (;;) {
    await index.refresh();
    const run = index.lookup(appName);
    if (run?.completed || options.signal?.aborted || clock.now() > deadline) return run;
    await clock.sleep(options.everyMs);
  }
}

/** Waits (up to `withinMs`) until the History Server at `server` answers for `sparkAppId`. */
export async function untilServed(server: URL, sparkAppId: string, options: { withinMs: number; signal?: AbortSignal; headers?: Readonly<Record<string, string>> }): Promise<void> {
  const deadline = Date.now() + options.withinMs;
  while (!options.signal?.aborted && Date.now() < deadline) {
    const response = await fetch(new URL(`/api/v1/applications/${encodeURIComponent(sparkAppId)}`, server), { headers: options.headers, signal: AbortSignal.timeout(5000) }).catch(() => undefined);
    await response?.body?.cancel();
    if (response?.ok) return;
    await sleep(250);
  }
}

/**
 * Whether an ended application's run opens from the history: its log is indexed, or it ended
 * less than `settlingMs` ago with an event log (Spark is still closing it).
 */
export function runAvailable(index: RunIndex, app: { appName: string; endedAt: string | null; config?: { engineConf?: Record<string, string> } }, settlingMs: number): boolean {
  if (index.lookup(app.appName)) return true;
  return app.endedAt !== null && Date.now() - Date.parse(app.endedAt) < settlingMs && writesEventLog(app.config?.engineConf);
}
