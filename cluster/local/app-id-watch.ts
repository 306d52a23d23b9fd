// Which Spark run each sandboxed driver started, as the service itself sees it. The history admits
// an event log by the `App ID` inside it (cluster/history/run-claims.ts), and any driver may write
// any id: first come used to win, so a driver that guessed a running run's id (local ids are
// `local-<epoch ms>`) and ended first took that id, and the real run's log was refused.
//
// The service watches the `spark-events` folder of the driver's own work dir. Only that driver
// writes there (the sandbox shows no other run's work dir), and its Spark creates the log as soon
// as it has its id, named after it, before any of the run's work. The other source offered, the
// driver's gated UI (`/api/v1/applications`), was not taken: it answers only once the UI is up
// (later, and never with spark.ui.enabled=false), and its port is one any driver on loopback may
// take first, which would have the service send this run's gate secret to another run.
//
// Names alone are read (nothing there is opened: the driver could leave a FIFO or a link). One id
// per attempt, the first seen, and only an id Spark could have given this attempt: `local-<ms>`
// from its start to now (an id of a run started before it, or a guess of one to come, is not),
// and no other application's. A driver can still name its own run anything (it is its own log);
// what it cannot do any more is take a run the service saw start elsewhere.
import { type FSWatcher, watch } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { sparkAppIdOfEntry } from '../history/event-log-head.js';
import type { LocalApps } from './local-apps.js';
import { workEventLogDir } from './sandbox-event-log.js';

/** Spark's id of a run in local mode; ids set otherwise (spark.app.id) carry no time and are not recorded. */
const LOCAL_ID = /^local-(\d{1,15})$/;

/** The ids Spark's entries in a driver's own event log folder are named after (a plain file, or a rolling log's folder). */
export async function entryIds(workDir: string): Promise<string[]> {
  const entries = await readdir(workEventLogDir(workDir), { withFileTypes: true }).catch(() => []);
  return entries
    .filter((entry) => entry.isFile() || (entry.isDirectory() && entry.name.startsWith('eventlog_v2_')))
    .flatMap((entry) => sparkAppIdOfEntry(entry.name) ?? []);
}

/**
 * Which of the ids a driver's folder names is the run its attempt started (undefined: none yet):
 * one Spark could have given it (`local-<ms>`, from the attempt's start to now) that no other
 * application holds; the earliest when several are.
 */
export function chooseAppId(ids: string[], attempt: { appName: string; startedMs: number; nowMs: number }, ownerOf: (sparkAppId: string) => string | undefined): string | undefined {
  const times = ids.flatMap((id) => {
    const ms = LOCAL_ID.exec(id)?.[1];
    const owner = ownerOf(id);
    return ms !== undefined && Number(ms) >= attempt.startedMs && Number(ms) <= attempt.nowMs && (owner === undefined || owner === attempt.appName) ? [Number(ms)] : [];
  });
  return times.length === 0 ? undefined : `local-${Math.min(...times)}`;
}

export interface WatchedAttempt {
  appName: string;
  attempt: number;
  workDir: string;
  /** When the attempt's driver started (its record's startedAt, ms since the epoch): no id of its run is older. */
  startedMs: number;
}

/** How often the folder is listed besides its change events (which a driver replacing its folder would silence). */
const EVERY_MS = 1000;

export class AppIdWatches {
  private readonly watches = new Map<string, { attempt: WatchedAttempt; stop: () => void }>();

  constructor(private readonly apps: LocalApps, private readonly everyMs = EVERY_MS) {}

  /** Watches a started driver's folder until the service has seen which run it started. */
  start(attempt: WatchedAttempt): void {
    this.watches.get(attempt.appName)?.stop();
    let busy = false;
    let again = false;
    let watcher: FSWatcher | undefined;
    const look = async () => {
      if (busy) { again = true; return; }
      busy = true;
      try {
        do { again = false; if (await this.look(attempt)) { stop(); return; } } while (again);
      } finally { busy = false; }
    };
    const run = () => { this.apps.background(look(), attempt.appName, 'could not see which run the driver started'); };
    const timer = setInterval(run, this.everyMs);
    const stop = () => {
      clearInterval(timer);
      watcher?.close();
      if (this.watches.get(attempt.appName)?.stop === stop) this.watches.delete(attempt.appName);
    };
    try {
      watcher = watch(workEventLogDir(attempt.workDir), run);
      watcher.on('error', () => watcher?.close()); // the folder gone: the timer still lists it
    } catch { /* no folder (yet): the timer lists it */ }
    this.watches.set(attempt.appName, { attempt, stop });
    run();
  }

  /** The driver ended: one last look (a run quicker than the watch, or one that ended while the service was down), then none. */
  async finish(attempt: WatchedAttempt): Promise<void> {
    this.watches.get(attempt.appName)?.stop();
    await this.look(attempt);
  }

  close(): void {
    for (const { stop } of [...this.watches.values()]) stop();
  }

  /** Records the attempt's run once its folder shows it; true when there is nothing more to watch. */
  private async look(attempt: WatchedAttempt): Promise<boolean> {
    const { appName } = attempt;
    const stored = this.apps.get(appName);
    if (stored?.record.state !== 'RUNNING' || (stored.record.attempt ?? 1) !== attempt.attempt) return true;
    if (stored.appIds?.some((seen) => seen.attempt === attempt.attempt)) return true;
    const id = chooseAppId(await entryIds(attempt.workDir), { appName, startedMs: attempt.startedMs, nowMs: Date.now() }, this.apps.recordedRuns.ownerOf);
    if (id === undefined) return false;
    const recorded = await this.apps.recordAppId(appName, attempt.attempt, id);
    if (recorded) this.apps.logger.info({ appName, sparkAppId: id, attempt: attempt.attempt }, `the driver of application ${appName} started run ${id}`);
    return recorded || Boolean(this.apps.get(appName)?.appIds?.some((seen) => seen.attempt === attempt.attempt));
  }
}
