// The driver logs' budget on disk (the decision is log-budget.ts's): measures the logs of the
// records, makes room by shrinking or replacing ended ones, and tells a starting driver how many
// bytes its log may take. Called synchronously just before a driver starts, and its grant is in
// the run's record before the next start measures, so two starts never count the same room twice.
import { closeSync, existsSync, fstatSync, ftruncateSync, openSync, readSync, statSync, statfsSync, writeFileSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { isTerminal } from '../cluster.js';
import { formatBytes } from './log-cap.js';
import { type LogOnDisk, NOTE_ROOM, planLogBudget, SHRUNK_KEEP_BYTES } from './log-budget.js';
import type { LocalLogger } from './logger.js';
import type { StoredApp } from './record-store.js';

export interface LogBudgetOptions {
  /** Bytes all drivers' logs may take together. */
  budget: number;
  /** Bytes one driver's log may take (--log-cap); undefined: as much as the budget. */
  cap?: number;
  logFile: (appName: string) => string;
  logger: LocalLogger;
}

/** `--log-budget auto`: a quarter of the filesystem the data dir is on (the records keep the rest). */
export function defaultLogBudget(dataDir: string): number {
  let dir = dataDir;
  while (!existsSync(dir) && dirname(dir) !== dir) dir = dirname(dir); // the data dir may not be made yet
  const fs = statfsSync(dir);
  return Math.floor((fs.blocks * fs.bsize) / 4);
}

const sizeOf = (file: string): number | undefined => {
  try {
    return statSync(file).size;
  } catch {
    return undefined; // never written (a run that did not start), or deleted meanwhile
  }
};

export class LogBudget {
  /**
   * Ended runs' log sizes, measured once: such a log changes only when this budget shrinks or
   * replaces it (measured again then), so a start stats the running and new logs only, not every
   * record's. What a driver's pipe still held when its record ended (at most a pipe's buffer) may
   * be missed; a deleted run's entry goes at the next start. `null`: no log on disk.
   */
  private readonly endedSizes = new Map<string, number | null>();

  constructor(private readonly options: LogBudgetOptions) {}

  private get wanted(): number {
    return Math.min(this.options.cap ?? this.options.budget, this.options.budget);
  }

  /**
   * Bytes `appName`'s log may take, the room made first. `apps`: every record (the running ones
   * hold their grant). A log cut short by the budget says so in its first line.
   */
  grant(appName: string, apps: readonly StoredApp[]): number {
    const plan = planLogBudget(this.options.budget, this.measure(appName, apps), this.wanted);
    for (const name of plan.drop) this.act(name, ['replace', 'replaced by a note'], (file) => dropLog(file, this.dropNote()));
    for (const name of plan.shrink) this.act(name, ['shrink', 'shrunk to its head and tail'], (file) => shrinkLog(file, SHRUNK_KEEP_BYTES, (removed) => this.shrinkNote(removed)));
    // Measured again: what a failed shrink did not give back is not granted.
    const { cap } = planLogBudget(this.options.budget, this.measure(appName, apps), this.wanted);
    if (cap < this.wanted) {
      const note = `[submission-service: the driver logs' budget of ${formatBytes(this.options.budget)} (--log-budget) leaves this log ${formatBytes(cap)} (its cap: ${formatBytes(this.wanted)}): the running drivers' logs hold the rest]\n`;
      try { writeFileSync(this.options.logFile(appName), note, { flag: 'a', mode: 0o600 }); } catch { /* the log goes on without it */ }
    }
    return cap;
  }

  private measure(appName: string, apps: readonly StoredApp[]): LogOnDisk[] {
    const now = new Date().toISOString();
    const names = new Set(apps.map(({ record }) => record.appName));
    for (const name of this.endedSizes.keys()) if (!names.has(name) || name === appName) this.endedSizes.delete(name);
    return apps.flatMap(({ record, run }) => {
      const bytes = this.sizeOf(record, run?.logFile, appName);
      const running = record.appName !== appName && record.state === 'RUNNING' && run !== undefined;
      // A running driver holds its whole grant; one of a record made before grants, the cap of today.
      if (running) return [{ appName: record.appName, bytes: bytes ?? 0, granted: (run.logCap ?? this.wanted) + NOTE_ROOM, endedAt: now }];
      if (bytes === undefined) return [];
      // The starting app's earlier attempts' log is the newest: the driver appends to it.
      const endedAt = record.appName === appName ? now : record.endedAt ?? record.startedAt ?? record.createdAt;
      return [{ appName: record.appName, bytes, endedAt }];
    });
  }

  /** The log's bytes now; an ended run's (not the starting one's) from what was measured before. */
  private sizeOf(record: StoredApp['record'], runLog: string | undefined, starting: string): number | undefined {
    const ended = isTerminal(record.state) && record.appName !== starting;
    const known = ended ? this.endedSizes.get(record.appName) : undefined;
    if (known !== undefined) return known ?? undefined;
    const bytes = sizeOf(this.logFile(record.appName, runLog));
    if (ended) this.endedSizes.set(record.appName, bytes ?? null);
    return bytes;
  }

  private logFile(appName: string, runLog?: string): string {
    return runLog ?? this.options.logFile(appName);
  }

  private act(appName: string, [verb, done]: [string, string], change: (file: string) => void): void {
    this.endedSizes.delete(appName); // measured again after the change, whatever it did
    try {
      change(this.options.logFile(appName));
      this.options.logger.info({ appName }, `driver log budget: an ended run's log ${done} to make room`);
    } catch (error) {
      this.options.logger.warn({ err: error, appName }, `driver log budget: could not ${verb} an ended run's log`);
    }
  }

  private shrinkNote(removed: number): string {
    return `\n[submission-service: ${removed} bytes of the middle of this log were removed to keep the driver logs within their budget of ${formatBytes(this.options.budget)} (--log-budget); its first and last ${formatBytes(SHRUNK_KEEP_BYTES)} are kept]\n`;
  }

  private dropNote(): string {
    return `[submission-service: this log was removed to keep the driver logs within their budget of ${formatBytes(this.options.budget)} (--log-budget): newer runs' logs needed the room]\n`;
  }
}

/**
 * Keeps the first and last `keep` bytes of `file` with `note` between them, in place: the note
 * and the tail are written over bytes the file already has, then the rest is cut off, so a full
 * disk does not stop it (on a filesystem that overwrites in place; a copy-on-write one may need a block).
 */
export function shrinkLog(file: string, keep: number, note: (removed: number) => string): void {
  const fd = openSync(file, 'r+');
  try {
    const size = fstatSync(fd).size;
    // A shrunk log's middle is its note (well under NOTE_ROOM): never cut into again.
    if (size - 2 * keep <= NOTE_ROOM) return;
    const text = Buffer.from(note(size - 2 * keep));
    const tail = Buffer.alloc(keep);
    const read = readSync(fd, tail, 0, keep, size - keep);
    writeSync(fd, text, 0, text.length, keep);
    writeSync(fd, tail, 0, read, keep + text.length);
    ftruncateSync(fd, keep + text.length + read);
  } finally {
    closeSync(fd);
  }
}

/** Replaces `file`'s content by `note`: cut first, so the note's bytes are free ones. */
export function dropLog(file: string, note: string): void {
  const fd = openSync(file, 'r+');
  try {
    ftruncateSync(fd, 0);
    writeSync(fd, Buffer.from(note), 0, Buffer.byteLength(note), 0);
  } finally {
    closeSync(fd);
  }
}
