// Which event log in object storage belongs to which application (Kubernetes mode): the S3
// counterpart of event-log-index.ts. Each log's head is read once (a ranged GET up to a byte
// cap), then answered from memory; a listing per refresh finds new logs and closed ones.
import { createInterface } from 'node:readline';
import { identityFromLines, sparkAppIdOfEntry } from './event-log-head.js';
import type { IndexedRun } from './event-log-index.js';
import type { ObjectStore } from './object-store.js';

/** The environment line carries the whole classpath: heads are read up to this many bytes. */
const HEAD_BYTES = 4 * 1024 * 1024;

const isIdentityEvent = (line: string) =>
  line.startsWith('{"Event":"SparkListenerEnvironmentUpdate"') || line.startsWith('{"Event":"SparkListenerApplicationStart"');

export class S3EventLogIndex {
  private readonly byApp = new Map<string, IndexedRun>();
  /** Entries read already: their appName, or null for a log that is not one of ours (or unreadable). */
  private readonly seen = new Map<string, string | null>();
  private refreshing: Promise<void> | undefined;

  /** `prefix`: the event log directory's key prefix in the bucket (no trailing slash; may be empty). */
  constructor(private readonly store: ObjectStore, private readonly prefix: string, private readonly onError: (error: unknown, entry: string) => void = () => {}) {}

  lookup(appName: string): IndexedRun | undefined {
    return this.byApp.get(appName);
  }

  /** Every run read so far, by appName. */
  runs(): IterableIterator<[string, IndexedRun]> {
    return this.byApp.entries();
  }

  refresh(): Promise<void> {
    this.refreshing ??= this.scan().finally(() => { this.refreshing = undefined; });
    return this.refreshing;
  }

  /** Deletes an application's event log (retention, or the application deleted). */
  async remove(appName: string): Promise<void> {
    const run = this.byApp.get(appName);
    if (!run) return;
    // A rolling log is a folder: its prefix ends with a slash (app-1/ must not take app-10/).
    await this.store.removePrefix(run.entry.startsWith('eventlog_v2_') ? `${this.key(run.entry)}/` : this.key(run.entry));
    this.byApp.delete(appName);
    this.seen.delete(run.entry);
  }

  /** The key of an entry (a rolling log's folder, or a single-file log). */
  private key(entry: string): string {
    return this.prefix ? `${this.prefix}/${entry}` : entry;
  }

  private async scan(): Promise<void> {
    const base = this.prefix ? `${this.prefix}/` : '';
    // One listing of the whole directory: entries, and which rolling logs are closed (appstatus_).
    const entries = new Set<string>();
    const closed = new Set<string>();
    const bytes = new Map<string, number>();
    const modified = new Map<string, number>();
    for await (const item of this.store.list(base, true)) {
      if (!('key' in item)) continue;
      const [entry, file] = item.key.slice(base.length).split('/');
      if (!entry) continue;
      entries.add(entry);
      bytes.set(entry, (bytes.get(entry) ?? 0) + item.size);
      modified.set(entry, Math.max(modified.get(entry) ?? 0, item.lastModified.getTime()));
      // appstatus_<id> once Spark closed the log; appstatus_<id>.inprogress while it writes.
      if (file === `appstatus_${sparkAppIdOfEntry(entry)}`) closed.add(entry);
    }
    for (const entry of [...this.seen.keys()]) if (!entries.has(entry)) this.forget(entry);
    for (const entry of entries) {
      const sparkAppId = sparkAppIdOfEntry(entry);
      if (!sparkAppId) continue;
      const completed = entry.startsWith('eventlog_v2_') ? closed.has(entry) : !entry.endsWith('.inprogress');
      const known = this.seen.get(entry);
      if (known === null) continue;
      if (known !== undefined) {
        const run = this.byApp.get(known);
        if (run) Object.assign(run, { completed, bytes: bytes.get(entry) ?? 0, modifiedMs: modified.get(entry) ?? 0 });
        continue;
      }
      await this.read(entry, sparkAppId, completed, bytes.get(entry) ?? 0, modified.get(entry) ?? 0);
    }
  }

  private async read(entry: string, sparkAppId: string, completed: boolean, size: number, modifiedMs: number): Promise<void> {
    const key = entry.startsWith('eventlog_v2_') ? `${this.key(entry)}/events_1_${sparkAppId}` : this.key(entry);
    try {
      const body = await this.store.read(key);
      if (!body) return; // not written yet: read again at the next refresh
      const events: string[] = [];
      let bytes = 0;
      let identity: ReturnType<typeof identityFromLines>;
      try {
        for await (const line of createInterface({ input: body, crlfDelay: Infinity })) {
          bytes += Buffer.byteLength(line) + 1;
          if (isIdentityEvent(line)) {
            events.push(line);
            identity = identityFromLines(events);
            if (identity) break;
          }
          if (bytes >= HEAD_BYTES) break;
        }
      } finally {
        body.destroy();
      }
      if (!identity) {
        if (bytes >= HEAD_BYTES) this.seen.set(entry, null); // not a log this index can place
        return;
      }
      this.seen.set(entry, identity.appName ?? null);
      if (identity.appName) this.byApp.set(identity.appName, { sparkAppId, entry, completed, bytes: size, modifiedMs });
    } catch (error) {
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
