// Which event log in a directory belongs to which application: read once per log (its head
// only, up to a byte cap), then answered from memory. Local mode's logs are plain files; the
// History Server renders them, this index only tells the service which run is whose, by what
// each log says (run-claims.ts), never by its file's name.
import { createReadStream } from 'node:fs';
import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { firstEventFileName, HEAD_BYTES, type HeadReading, identityFromHead, sparkAppIdOfEntry } from './event-log-head.js';
import { ClaimedLogIndex, type EventLogIndexOptions } from './claimed-log-index.js';

export type { IndexedRun } from './run-claims.js';

/** The file holding an entry's head: the file itself, or a rolling log's first file (named after the same run). */
export async function firstEventFile(dir: string, entry: string): Promise<string | undefined> {
  const path = join(dir, entry);
  const info = await stat(path);
  if (!info.isDirectory()) return path;
  const named = sparkAppIdOfEntry(entry);
  if (!named) return undefined;
  const first = firstEventFileName(named);
  return (await readdir(path)).includes(first) ? join(path, first) : undefined;
}

/** The identity in a file's head, reading at most HEAD_BYTES of it. */
export function readIdentity(file: string): Promise<HeadReading> {
  return identityFromHead(createReadStream(file, { end: HEAD_BYTES - 1 }));
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

export type { EventLogIndexOptions } from './claimed-log-index.js';

export class EventLogIndex extends ClaimedLogIndex {
  constructor(readonly dir: string, options: EventLogIndexOptions = {}) {
    super('local', options);
  }

  protected async removeEntry(entry: string): Promise<void> {
    await rm(join(this.dir, entry), { recursive: true, force: true });
  }

  protected async scan(): Promise<void> {
    const entries = await readdir(this.dir).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return [] as string[];
      throw error;
    });
    const present = new Set(entries);
    for (const entry of this.claims.entries()) if (!present.has(entry)) this.claims.forget(entry);
    for (const entry of entries) {
      if (!sparkAppIdOfEntry(entry)) continue;
      const known = this.claims.known(entry);
      if (known === null) continue;
      if (known !== undefined) {
        const run = this.claims.runOf(entry);
        if (run && !run.completed) {
          run.completed = await isCompleted(this.dir, entry, run.sparkAppId);
          Object.assign(run, await entrySize(this.dir, entry).catch(() => ({})));
        }
        continue;
      }
      await this.read(entry);
    }
  }

  private async read(entry: string): Promise<void> {
    try {
      const file = await firstEventFile(this.dir, entry);
      const reading = file ? await readIdentity(file) : undefined;
      if (!reading?.identity) {
        // Not yet written that far (a driver still starting): read again at the next refresh,
        // unless the head is past the cap already (not a log this index can place).
        if (reading?.pastCap) this.claims.unplaceable(entry);
        return;
      }
      const { sparkAppId } = reading.identity;
      this.claims.admit(entry, reading.identity, { completed: await isCompleted(this.dir, entry, sparkAppId), ...await entrySize(this.dir, entry) });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return; // removed meanwhile
      this.claims.unplaceable(entry);
      this.onError(error, entry);
    }
  }
}
