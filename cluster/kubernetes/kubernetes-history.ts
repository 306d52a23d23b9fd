// Kubernetes mode's history: drivers write event logs to object storage (admission sets
// `s3a://…`), S3EventLogIndex tells whose each log is, Spark's History Server (the chart's
// Deployment, or the test bed's host process) renders them from the same bucket, and the
// controller's archived logs sit beside them. Retention removes all of it together.
import { isTerminal } from '../cluster.js';
import type { EventFeed } from '../events.js';
import type { ObjectStore } from '../history/object-store.js';
import { describeRefusal } from '../history/run-claims.js';
import { readStoredRunProfile } from '../history/run-profile-reader.js';
import type { RunProfile } from '../../domain/index.js';
import { S3EventLogIndex } from '../history/s3-event-log-index.js';
import { runAvailable, settleRun, untilServed } from '../history/settle.js';
import type { HistoryTarget, SparkHistory, WarmedListener } from '../history/spark-history.js';
import { HistoryWarmer } from '../history/warm.js';
import type { LogArchive } from './log-archive.js';

export interface KubernetesHistoryOptions {
  store: ObjectStore;
  /** The event log directory's key prefix in the store's bucket. */
  eventLogPrefix: string;
  /** The History Server reading that directory. */
  server: URL;
  logArchive?: LogArchive;
  events: EventFeed;
  log: (message: string) => void;
  retentionMs?: number;
}

/** A run that ended this recently and is not read yet is about to be: S3A uploads the log as the driver closes it. */
const SETTLING_MS = 60_000;

export class KubernetesSparkHistory implements SparkHistory {
  readonly retentionMs: number | undefined;
  /** Resolves once the event log directory exists (drivers and the History Server need it). */
  readonly ready: Promise<void>;
  private readonly index: S3EventLogIndex;
  /**
   * Replays a big run's log as soon as it ended (warm.ts). Each replica asks; the History Server
   * loads a run once however many ask at the same time.
   */
  private readonly warmer: HistoryWarmer;
  private readonly unsubscribe: () => void;

  constructor(private readonly options: KubernetesHistoryOptions) {
    this.retentionMs = options.retentionMs;
    this.index = new S3EventLogIndex(options.store, options.eventLogPrefix, {
      onError: (error, entry) => options.log(`could not read the event log ${entry}: ${String(error)}`),
      onRefused: (refusal) => options.log(describeRefusal(refusal)),
    });
    this.warmer = new HistoryWarmer({ server: () => Promise.resolve(options.server), log: options.log });
    const background = (work: Promise<unknown>, what: string) => {
      work.catch((error: unknown) => options.log(`${what}: ${(error as Error)?.message ?? String(error)}`));
    };
    this.unsubscribe = options.events.subscribe(undefined, (message) => {
      if (message.type === 'deleted') background(this.remove(message.record.appName), 'could not remove a run\'s history');
      else if (message.type === 'changed' && isTerminal(message.record.state)) {
        background(this.settle(message.record.appName).then((run) => this.warmer.warm(message.record.appName, run)), 'could not read the event logs');
      }
    });
    this.ready = options.store.ensureFolder(options.eventLogPrefix);
    // This replica's page cache is empty after a restart (and so is a restarted History Server's memory):
    // the runs that ended last are warmed again.
    background(this.ready.then(() => this.index.refresh()).then(() => this.warmer.warmRecent(this.index.runs())), 'could not prepare the event log directory');
  }

  run(appName: string): { sparkAppId: string; completed: boolean } | undefined {
    return this.index.lookup(appName);
  }

  onWarmed(listener: WarmedListener): () => void {
    return this.warmer.onWarmed(listener);
  }

  available(app: { appName: string; endedAt: string | null; config?: { engineConf?: Record<string, string> } }): boolean {
    return runAvailable(this.index, app, SETTLING_MS);
  }

  async target(appName: string, signal?: AbortSignal): Promise<HistoryTarget | undefined> {
    const run = this.index.lookup(appName) ?? await this.settle(appName, signal);
    if (!run) return undefined;
    const server = this.options.server;
    // The History Server finds a new log at its next scan.
    await untilServed(server, run.sparkAppId, { withinMs: 20_000, signal });
    return { server, sparkAppId: run.sparkAppId };
  }

  /**
   * An ended run's profile from its event log (cluster/profile-recorder.ts), once the log is
   * closed or no more is coming (a killed driver's stays in progress); null: no log of it found.
   */
  async readProfile(appName: string): Promise<RunProfile | null> {
    const known = this.index.lookup(appName);
    const settled = known?.completed ? known : await this.settle(appName);
    return settled ? readStoredRunProfile(this.options.store, this.options.eventLogPrefix, settled.entry) : null;
  }

  /** The run's event log and its archived logs. */
  async remove(appName: string): Promise<void> {
    await this.index.refresh();
    await this.index.remove(appName);
    await this.options.logArchive?.remove(appName);
  }

  /**
   * What no record names any more (its application deleted while this service was down, or
   * written by runs the service did not submit): event logs and archived logs whose newest
   * object is older than the retention.
   */
  async sweep(now = Date.now()): Promise<number> {
    if (this.retentionMs === undefined) return 0;
    const prefixes = [this.options.eventLogPrefix, this.options.logArchive?.key('x', 'driver').replace(/x\/driver\.log$/, '').replace(/\/$/, '')]
      .filter((p): p is string => p !== undefined);
    let removed = 0;
    for (const prefix of prefixes) {
      const base = prefix ? `${prefix}/` : '';
      // Per entry (a run's folder, or a single-file log): its newest object's time.
      const newest = new Map<string, number>();
      for await (const item of this.options.store.list(base)) {
        if (!('key' in item)) continue;
        const rest = item.key.slice(base.length);
        const slash = rest.indexOf('/');
        const entry = slash < 0 ? rest : rest.slice(0, slash + 1); // a folder keeps its slash: app-1/ is not app-10/
        if (entry && entry !== '/') newest.set(entry, Math.max(newest.get(entry) ?? 0, item.lastModified.getTime()));
      }
      for (const [entry, modified] of newest) {
        if (now - modified <= this.retentionMs) continue;
        removed += await this.options.store.removePrefix(`${base}${entry}`);
      }
    }
    if (removed > 0) await this.index.refresh();
    return removed;
  }

  async close(): Promise<void> {
    this.unsubscribe();
    this.warmer.close();
  }

  /** Reads the listing again until this application's run is found, for as long as a closing log may take. */
  private settle(appName: string, signal?: AbortSignal) {
    return settleRun(this.index, appName, { withinMs: 15_000, everyMs: 500, signal });
  }
}
