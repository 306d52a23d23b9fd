// One retention for everything an ended run leaves: its record, its log and its event log go
// together once it ended longer ago than the setting. Swept in the background, page by page.
import { type Cluster, isTerminal } from '../cluster.js';
import type { SparkHistory } from './spark-history.js';
import { parseDuration } from '../../lib/duration.js';

export interface RetentionOptions {
  cluster: Cluster;
  history?: SparkHistory;
  retentionMs: number;
  /** How often to sweep; default a tenth of the retention, between 5 s and an hour. */
  intervalMs?: number;
  onError: (error: unknown, appName?: string) => void;
}

/** Parses `30d`, `12h`, `90m`, `45s` (or a bare number of days); `0` or `off`: keep for ever (undefined). */
export function parseRetention(text: string): number | undefined {
  if (text.trim() === 'off') return undefined;
  const ms = parseDuration(text, 'd');
  if (ms === undefined) throw new Error(`--retention takes a duration such as 30d, 12h, 90m or 45s (or off); got "${text}"`);
  return ms > 0 ? ms : undefined;
}

/** Whether an application ended longer ago than the retention (running ones never expire). */
export const expired = (app: { state: Parameters<typeof isTerminal>[0]; endedAt: string | null }, retentionMs: number, now: number): boolean =>
  isTerminal(app.state) && app.endedAt !== null && now - Date.parse(app.endedAt) > retentionMs;

export class RetentionSweeper {
  private readonly timer: NodeJS.Timeout;
  private sweeping: Promise<number> | undefined;

  constructor(private readonly options: RetentionOptions) {
    const interval = options.intervalMs ?? Math.min(3_600_000, Math.max(5000, options.retentionMs / 10));
    this.timer = setInterval(() => { void this.sweep(); }, interval);
    this.timer.unref();
  }

  /** Removes every expired application; the count removed. One sweep at a time. */
  sweep(now = Date.now()): Promise<number> {
    this.sweeping ??= this.run(now).catch((error: unknown) => { this.options.onError(error); return 0; })
      .finally(() => { this.sweeping = undefined; });
    return this.sweeping;
  }

  close(): void {
    clearInterval(this.timer);
  }

  private async run(now: number): Promise<number> {
    const { cluster, history, retentionMs } = this.options;
    const doomed: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await cluster.list({ limit: 500, cursor });
      for (const record of page.items) if (expired(record, retentionMs, now)) doomed.push(record.appName);
      cursor = page.next ?? undefined;
    } while (cursor);
    let removed = 0;
    await history?.sweep?.(now).catch((error: unknown) => this.options.onError(error));
    for (const appName of doomed) {
      try {
        await history?.remove(appName);
        if (await cluster.delete(appName)) removed += 1;
      } catch (error) {
        this.options.onError(error, appName);
      }
    }
    return removed;
  }
}
