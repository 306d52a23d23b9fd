// Which event log in a directory belongs to which application: read once per log (its head
// only, up to a byte cap), then answered from memory. Local mode's logs are plain files; the
// History Server renders them, this index only tells the service which run is whose.
import { createReadStream } from 'node:fs';
import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { identityFromLines, sparkAppIdOfEntry } from './event-log-head.js';

export interface IndexedRun {
  sparkAppId: string;
  /** The log's entry in the directory (a rolling log's folder, or a file). */
  entry: string;
  /** Spark closed the log: the run ended (a killed driver's log stays in progress). */
  completed: boolean;
  /** The log's size in bytes (all its files), as last read: what a replay of it costs. */
  bytes: number;
  /** When the log was last written (its newest file), ms since the epoch: about when the run ended. */
  modifiedMs: number;
}

/** The environment line carries the whole classpath: heads are read up to this many bytes. */
const HEAD_BYTES = 4 * 1024 * 1024;

export async function firstEventFile(dir: string, entry: string): Promise<string | undefined> {
  const path = join(dir, entry);
  const info = await stat(path);
  if (!info.isDirectory()) return path;
  const files = (await readdir(path)).filter((f) => /^events_1_/.test(f) && !/\.(lz4|lzf|snappy|zstd)$/.test(f));
  return files.length > 0 ? join(path, files[0]) : undefined;
}

export async function readIdentity(file: string) {
  const stream = createReadStream(file, { encoding: 'utf8', end: HEAD_BYTES - 1 });
  const events: string[] = []; // only the two kinds identityFromLines reads
  try {
    for await (const line of createInterface({ input: stream, crlfDelay: Infinity })) {
      if (!line.startsWith('{"Event":"SparkListenerEnvironmentUpdate"') && !line.startsWith('{"Event":"SparkListenerApplicationStart"')) continue;
      events.push(line);
      const identity = identityFromLines(events);
      if (identity) return identity;
    }
    return undefined;
  } finally {
    stream.destroy();
  }
}

/** An entry's size (a single file's, or the sum of a rolling log's files) and its newest file's time. */
async function entrySize(dir: string, entry: string): Promise<{ bytes: number; modifiedMs: number }> {
  const path = join(dir, entry);
  const info = await stat(path);
  if (!info.isDirectory()) return { bytes: info.size, modifiedMs: info.mtimeMs };
  let bytes = 0;
  let modifiedMs = 0;
  for (const file of await readdir(path)) {
    const one = await stat(join(path, file)).catch(() => undefined);
    bytes += one?.size ?? 0;
    modifiedMs = Math.max(modifiedMs, one?.mtimeMs ?? 0);
  }
  return { bytes, modifiedMs };
}

async function isCompleted(dir: string, entry: string, sparkAppId: string): Promise<boolean> {
  if (!entry.startsWith('eventlog_v2_')) return !entry.endsWith('.inprogress');
  const files = await readdir(join(dir, entry)).catch(() => [] as string[]);
  return files.includes(`appstatus_${sparkAppId}`);
}

export class EventLogIndex {
  private readonly byApp = new Map<string, IndexedRun>();
  /** Entries read already: their appName, or null for a log that is not one of ours (or unreadable). */
  private readonly seen = new Map<string, string | null>();
  private refreshing: Promise<void> | undefined;

  constructor(readonly dir: string, private readonly onError: (error: unknown, entry: string) => void = () => {}) {}

  lookup(appName: string): IndexedRun | undefined {
    return this.byApp.get(appName);
  }

  /** Every run read so far, by appName. */
  runs(): IterableIterator<[string, IndexedRun]> {
    return this.byApp.entries();
  }

  /** Reads the logs that appeared since the last call; one refresh at a time (callers share it). */
  refresh(): Promise<void> {
    this.refreshing ??= this.scan().finally(() => { this.refreshing = undefined; });
    return this.refreshing;
  }

  /** Deletes an application's event log (retention, or the application deleted). */
  async remove(appName: string): Promise<void> {
    const run = this.byApp.get(appName);
    if (!run) return;
    await rm(join(this.dir, run.entry), { recursive: true, force: true });
    this.byApp.delete(appName);
    this.seen.delete(run.entry);
  }

  private async scan(): Promise<void> {
    const entries = await readdir(this.dir).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return [] as string[];
      throw error;
    });
    const present = new Set(entries);
    for (const entry of [...this.seen.keys()]) if (!present.has(entry)) this.forget(entry);
    for (const entry of entries) {
      const sparkAppId = sparkAppIdOfEntry(entry);
      if (!sparkAppId) continue;
      const known = this.seen.get(entry);
      if (known === null) continue;
      if (known !== undefined) {
        const run = this.byApp.get(known);
        if (run && !run.completed) {
          run.completed = await isCompleted(this.dir, entry, sparkAppId);
          Object.assign(run, await entrySize(this.dir, entry).catch(() => ({})));
        }
        continue;
      }
      await this.read(entry, sparkAppId);
    }
  }

  private async read(entry: string, sparkAppId: string): Promise<void> {
    try {
      const file = await firstEventFile(this.dir, entry);
      const identity = file ? await readIdentity(file) : undefined;
      if (!identity) {
        // Not yet written that far (a driver still starting): read again at the next refresh,
        // unless the head is past the cap already (not a log this index can place).
        if (file && (await stat(file)).size >= HEAD_BYTES) this.seen.set(entry, null);
        return;
      }
      this.seen.set(entry, identity.appName ?? null);
      if (!identity.appName) return;
      this.byApp.set(identity.appName, { sparkAppId, entry, completed: await isCompleted(this.dir, entry, sparkAppId), ...await entrySize(this.dir, entry) });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return; // removed meanwhile
      this.seen.set(entry, null);
      this.onError(error, entry);
    }
  }

  private forget(entry: string): void {
    const appName = this.seen.get(entry);
    this.seen.delete(entry);
    if (appName && this.byApp.get(appName)?.entry === entry) this.byApp.delete(appName);
  }
}
