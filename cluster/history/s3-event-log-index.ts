// Which event log in object storage belongs to which application (Kubernetes mode): the S3
// counterpart of event-log-index.ts. Each log's head is read once (a GET stopped at a byte
// cap), then answered from memory; a listing per refresh finds new logs and closed ones. A log
// is known by what it says, never by its key (run-claims.ts).
import { firstEventFileName, identityFromHead, sparkAppIdOfEntry } from './event-log-head.js';
import type { IndexedRun } from './run-claims.js';
import { ClaimedLogIndex, type EventLogIndexOptions } from './claimed-log-index.js';
import type { ObjectStore } from './object-store.js';

/** What one listing tells of an entry (a rolling log's folder, or a single-file log). */
interface Listed {
  bytes: number;
  /** Its newest object's time: about when the run ended. */
  modifiedMs: number;
  /** Its oldest object's time (the store's clock): which of two logs claiming one run came first. */
  firstMs: number;
  /** A rolling log's `appstatus_<id>` (Spark closed it), as the entry's name says the id. */
  closed: boolean;
}

export class S3EventLogIndex extends ClaimedLogIndex {
  /** `prefix`: the event log directory's key prefix in the bucket (no trailing slash; may be empty). */
  constructor(private readonly store: ObjectStore, private readonly prefix: string, options: EventLogIndexOptions = {}) {
    super('s3', options);
  }

  protected async removeEntry(entry: string): Promise<void> {
    // A rolling log is a folder: its prefix ends with a slash (app-1/ must not take app-10/).
    await this.store.removePrefix(entry.startsWith('eventlog_v2_') ? `${this.key(entry)}/` : this.key(entry));
  }

  /** The key of an entry (a rolling log's folder, or a single-file log). */
  private key(entry: string): string {
    return this.prefix ? `${this.prefix}/${entry}` : entry;
  }

  /** One listing of the whole directory: its entries, their sizes and times, which rolling logs are closed. */
  private async list(): Promise<Map<string, Listed>> {
    const base = this.prefix ? `${this.prefix}/` : '';
    const entries = new Map<string, Listed>();
    for await (const item of this.store.list(base, true)) {
      if (!('key' in item)) continue;
      const [entry, file] = item.key.slice(base.length).split('/');
      if (!entry) continue;
      const time = item.lastModified.getTime();
      const listed = entries.get(entry) ?? { bytes: 0, modifiedMs: 0, firstMs: Infinity, closed: false };
      listed.bytes += item.size;
      listed.modifiedMs = Math.max(listed.modifiedMs, time);
      listed.firstMs = Math.min(listed.firstMs, time);
      // appstatus_<id> once Spark closed the log; appstatus_<id>.inprogress while it writes.
      if (file === `appstatus_${sparkAppIdOfEntry(entry)}`) listed.closed = true;
      entries.set(entry, listed);
    }
    return entries;
  }

  protected async scan(): Promise<void> {
    const entries = await this.list();
    for (const entry of this.claims.entries()) if (!entries.has(entry)) this.claims.forget(entry);
    const state = (entry: string, listed: Listed) => ({
      completed: entry.startsWith('eventlog_v2_') ? listed.closed : !entry.endsWith('.inprogress'),
      bytes: listed.bytes, modifiedMs: listed.modifiedMs,
    });
    const unread: Array<[string, Listed]> = [];
    for (const [entry, listed] of entries) {
      if (!sparkAppIdOfEntry(entry)) continue;
      const known = this.claims.known(entry);
      if (known === null) continue;
      const run = known === undefined ? undefined : this.claims.runOf(entry);
      if (run) Object.assign(run, state(entry, listed));
      else if (known === undefined) unread.push([entry, listed]);
    }
    // The log written first keeps a run both claim, whatever order a listing (or a restart) gives.
    unread.sort(([, a], [, b]) => a.firstMs - b.firstMs);
    for (const [entry, listed] of unread) await this.read(entry, () => state(entry, listed));
  }

  private async read(entry: string, state: () => Omit<IndexedRun, 'sparkAppId' | 'entry'>): Promise<void> {
    const named = sparkAppIdOfEntry(entry)!;
    const key = entry.startsWith('eventlog_v2_') ? `${this.key(entry)}/${firstEventFileName(named)}` : this.key(entry);
    try {
      const body = await this.store.read(key);
      if (!body) return; // not written yet: read again at the next refresh
      const reading = await identityFromHead(body);
      if (!reading.identity) {
        if (reading.pastCap) this.claims.unplaceable(entry); // not a log this index can place
        return;
      }
      this.claims.admit(entry, reading.identity, state());
    } catch (error) {
      this.claims.unplaceable(entry);
      this.onError(error, entry);
    }
  }
}
