// What both event log indexes (a directory: event-log-index.ts; object storage:
// s3-event-log-index.ts) share: the runs they hold (RunClaims), one refresh at a time, and
// removal. Each says only how it lists, reads and deletes its entries.
import { type IndexedRun, type RecordedRuns, type Refusal, RunClaims } from './run-claims.js';

export interface EventLogIndexOptions {
  onError?: (error: unknown, entry: string) => void;
  /** A log named after, or claiming, another run or application (run-claims.ts). */
  onRefused?: (refusal: Refusal) => void;
  /** The runs the service saw each application's drivers start (run-claims.ts): they decide whose an id is. */
  recorded?: RecordedRuns;
}

export abstract class ClaimedLogIndex {
  protected readonly claims: RunClaims;
  protected readonly onError: (error: unknown, entry: string) => void;
  private refreshing: Promise<void> | undefined;

  protected constructor(store: 'local' | 's3', options: EventLogIndexOptions) {
    this.onError = options.onError ?? (() => {});
    this.claims = new RunClaims(store, options.onRefused ?? (() => {}), options.recorded);
  }

  lookup(appName: string): IndexedRun | undefined {
    return this.claims.lookup(appName);
  }

  /** Every run read so far, by appName. */
  runs(): IterableIterator<[string, IndexedRun]> {
    return this.claims.runs();
  }

  /** Reads the logs that appeared since the last call; one refresh at a time (callers share it). */
  refresh(): Promise<void> {
    this.refreshing ??= this.scan().finally(() => { this.refreshing = undefined; });
    return this.refreshing;
  }

  /** Deletes an application's event log (retention, or the application deleted). */
  async remove(appName: string): Promise<void> {
    const run = this.claims.lookup(appName);
    if (!run) return;
    await this.removeEntry(run.entry);
    this.claims.forget(run.entry);
  }

  /** Lists the entries: forgets those gone, reads the new ones, updates the unfinished. */
  protected abstract scan(): Promise<void>;

  /** Deletes one entry (a rolling log's folder, or a single-file log). */
  protected abstract removeEntry(entry: string): Promise<void>;
}
