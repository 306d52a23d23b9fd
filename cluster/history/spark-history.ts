// The history of ended runs as the API and the dashboard see it, whatever keeps it (local
// mode: event logs on disk and a History Server started on demand).

export interface HistoryTarget {
  /** The History Server's address. */
  server: URL;
  /** Spark's id of the run, the History Server's name for it. */
  sparkAppId: string;
  /** Headers every request to the server must carry (local mode's gate secret, cluster/local/ui-gate.ts). */
  headers?: Readonly<Record<string, string>>;
}

/** What a run's warm-up tells once the History Server has replayed it (warm.ts); bounded by `signal`. */
export type WarmedListener = (appName: string, target: HistoryTarget, signal: AbortSignal) => Promise<void>;

export interface SparkHistory {
  /** How long ended runs are kept (records, event logs, logs); undefined: for ever. */
  readonly retentionMs: number | undefined;
  /** From memory, for the API's answers: whether an ended application's run opens from the history. */
  available(app: { appName: string; endedAt: string | null; config?: { engineConf?: Record<string, string> } }): boolean;
  /**
   * Where an ended application's run is served: waits (bounded) for a run that just ended to be
   * read and for the History Server to answer; undefined when there is no history of it.
   */
  target(appName: string, signal?: AbortSignal): Promise<HistoryTarget | undefined>;
  /**
   * From memory: the application's run as last read (undefined: none found yet), and whether
   * its log is final (Spark closed it: the run's pages no longer change).
   */
  run(appName: string): { sparkAppId: string; completed: boolean } | undefined;
  /** Calls `listener` after each run's warm-up replay (at its end, and for recent runs at start); returns the unsubscribe. */
  onWarmed(listener: WarmedListener): () => void;
  /** Deletes the run's event log (its application is deleted or expired). */
  remove(appName: string): Promise<void>;
  /** Removes what no record names any more and is older than the retention (object storage); the count removed. */
  sweep?(now?: number): Promise<number>;
  close(): Promise<void>;
}
