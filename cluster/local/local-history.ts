// Local mode's history: drivers write event logs under <data dir>/spark-events (admission sets
// it), EventLogIndex tells whose each log is, and Spark's History Server renders them. Where the
// service saw which run an application's driver started (`recorded`, app-id-watch.ts), a link
// opens that run or none: a log indexed before the id was seen cannot lend it another run.
import { join } from 'node:path';
import { isTerminal } from '../cluster.js';
import type { EventFeed } from '../events.js';
import { EventLogIndex } from '../history/event-log-index.js';
import { describeRefusal, type RecordedRuns } from '../history/run-claims.js';
import { type RunIndex, runAvailable, settleRun, untilServed } from '../history/settle.js';
import type { HistoryTarget, SparkHistory, WarmedListener } from '../history/spark-history.js';
import { HistoryWarmer } from '../history/warm.js';
import { type HistorySpark, LocalHistoryServer } from './history-server.js';
import type { LocalLogger } from './logger.js';

export interface LocalHistoryOptions {
  dataDir: string;
  /** Spark's `spark-class`, and the Python whose pyspark it belongs to. */
  sparkClass: string;
  python?: string;
  /** Which Spark runs the History Server, asked at each use (history-server.ts); default: `sparkClass`. */
  spark?: () => Promise<HistorySpark>;
  events: EventFeed;
  log: LocalLogger;
  retentionMs?: number;
  /** The runs the service saw each application's drivers start (local mode's sandboxed drivers). */
  recorded?: RecordedRuns;
}

/** A run that ended this recently and is not read yet is about to be: Spark closes its log as the driver ends. */
const SETTLING_MS = 30_000;

export const eventLogDir = (dataDir: string): string => join(dataDir, 'spark-events');

export class LocalSparkHistory implements SparkHistory {
  readonly retentionMs: number | undefined;
  private readonly index: EventLogIndex;
  /** The index as links see it: an application's run only if it is one the service saw it start (when it saw any). */
  private readonly runs: RunIndex;
  private readonly dir: string;
  private readonly server: LocalHistoryServer;
  /** Replays a big run's log as soon as it ended, so its first open does not wait for it (warm.ts). */
  readonly warmer: HistoryWarmer;
  private readonly unsubscribe: () => void;

  constructor(options: LocalHistoryOptions) {
    this.retentionMs = options.retentionMs;
    const dir = eventLogDir(options.dataDir);
    this.dir = dir;
    this.index = new EventLogIndex(dir, {
      onError: (error, entry) => options.log.warn({ err: error, entry }, 'could not read an event log'),
      onRefused: (refusal) => options.log.warn({ entry: refusal.entry, appName: refusal.identity.appName, owner: refusal.owner }, describeRefusal(refusal)),
      recorded: options.recorded,
    });
    const { recorded } = options;
    this.runs = {
      refresh: () => this.index.refresh(),
      lookup: (appName) => {
        const run = this.index.lookup(appName);
        const seen = recorded?.idsOf(appName) ?? [];
        return run && (seen.length === 0 || seen.includes(run.sparkAppId)) ? run : undefined;
      },
    };
    this.server = new LocalHistoryServer({
      sparkClass: options.sparkClass, python: options.python, spark: options.spark, logDir: dir,
      runDir: join(options.dataDir, 'run'), logFile: join(options.dataDir, 'logs', 'history-server.log'),
    });
    this.warmer = new HistoryWarmer({ server: () => this.server.url(), headers: this.server.headers, log: (message) => options.log.warn(message) });
    const background = (work: Promise<unknown>, what: string) => {
      work.catch((error: unknown) => options.log.warn({ err: error }, what));
    };
    // Runs that ended are read as soon as Spark has closed their logs; a deleted application's goes.
    this.unsubscribe = options.events.subscribe(undefined, (message) => {
      if (message.type === 'deleted') background(this.remove(message.record.appName), 'could not remove an event log');
      else if (message.type === 'changed' && isTerminal(message.record.state)) {
        background(this.settle(message.record.appName).then((run) => this.warmer.warm(message.record.appName, run)), 'could not read the event logs');
      }
    });
    // Replays are in the History Server's memory only: after a restart, the runs that ended last are warmed again.
    background(this.index.refresh().then(() => this.warmer.warmRecent(this.index.runs())), 'could not read the event logs');
  }

  run(appName: string): { sparkAppId: string; completed: boolean } | undefined {
    return this.runs.lookup(appName);
  }

  onWarmed(listener: WarmedListener): () => void {
    return this.warmer.onWarmed(listener);
  }

  available(app: { appName: string; endedAt: string | null; config?: { engineConf?: Record<string, string> } }): boolean {
    return runAvailable(this.runs, app, SETTLING_MS);
  }

  async target(appName: string, signal?: AbortSignal): Promise<HistoryTarget | undefined> {
    const run = this.runs.lookup(appName) ?? await this.settle(appName, signal);
    if (!run) return undefined;
    const server = await this.server.url();
    // The History Server finds a new log at its next scan (every second here).
    const { headers } = this.server;
    await untilServed(server, run.sparkAppId, { withinMs: 15_000, signal, headers });
    return { server, sparkAppId: run.sparkAppId, headers };
  }

  /** Where an ended run's event log is, once Spark closed it (or gave up on it): for its job's profile. */
  async eventLog(appName: string): Promise<{ dir: string; entry: string } | undefined> {
    const run = this.runs.lookup(appName) ?? await this.settle(appName);
    const settled = run && !run.completed ? await this.settle(appName) : run;
    return settled && { dir: this.dir, entry: settled.entry };
  }

  async remove(appName: string): Promise<void> {
    await this.index.remove(appName);
  }

  async close(): Promise<void> {
    this.unsubscribe();
    this.warmer.close();
    await this.server.close();
  }

  /** Reads the logs again until this application's run is found, for as long as a closing log may take. */
  private settle(appName: string, signal?: AbortSignal) {
    return settleRun(this.runs, appName, { withinMs: 10_000, everyMs: 250, signal });
  }
}
