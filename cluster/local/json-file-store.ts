// Local mode's records kept one JSON file each in a folder (config templates, schedules): written
// atomically, read once at start into memory, where reads are answered. A file that is not a
// whole record is set aside (`.corrupt`) rather than stopping the service.
//
// Changes to one record are serialised (create, replace, delete in the order they came): without
// that, a write racing a DELETE could land its file after the DELETE removed it, and the record
// came back at the next start. The memory changes only once the disk did.
import { readdirSync, readFileSync } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { isTempFile, makePrivateDir, removeTempFiles, setAside, writeFileAtomic, type WriteFileAtomic } from '../../lib/atomic-file.js';
import { KeyedSerial } from '../../lib/keyed-serial.js';
import { ConflictError, NotFoundError } from '../cluster.js';
import type { LocalLogger } from './logger.js';

export interface JsonFileStoreOptions<T> {
  log: LocalLogger;
  /** Where writes go; tests inject failures here. */
  writeFile?: WriteFileAtomic;
  /** What a record is called in errors and the log ("config template", "schedule"). */
  kind: string;
  nameOf(record: T): string;
  /** Whether parsed JSON is a whole record. */
  isWhole(value: T | null): boolean;
}

/**
 * The records of a folder of JSON files (made private if new), after the temp files of an
 * interrupted write are removed; a file that is not a whole record is set aside and logged.
 */
export function loadJsonFolder<T>(dir: string, options: Pick<JsonFileStoreOptions<T>, 'log' | 'kind' | 'isWhole'>): T[] {
  makePrivateDir(dir);
  const stale = removeTempFiles(dir);
  if (stale.length > 0) options.log.warn({ dir, files: stale }, 'removed temp files left by an interrupted write');
  const records: T[] = [];
  for (const name of readdirSync(dir)) {
    if (!name.endsWith('.json') || isTempFile(name)) continue;
    const path = join(dir, name);
    const record = readWhole(path, options.isWhole);
    if (record === undefined) options.log.error({ file: path, setAsideAs: setAside(path) }, `${options.kind} ${path} cannot be read; set aside as ${path}.corrupt`);
    else records.push(record);
  }
  return records;
}

/** undefined for a file that is not a whole record. */
function readWhole<T>(path: string, isWhole: (value: T | null) => boolean): T | undefined {
  try {
    const record = JSON.parse(readFileSync(path, 'utf8')) as T | null;
    return isWhole(record) ? record as T : undefined;
  } catch (error) {
    if (error instanceof SyntaxError) return undefined;
    throw error;
  }
}

export class JsonFileStore<T> {
  private readonly cache = new Map<string, T>();
  private readonly changes = new KeyedSerial();
  private readonly writeFile: WriteFileAtomic;

  constructor(private readonly dir: string, private readonly options: JsonFileStoreOptions<T>) {
    this.writeFile = options.writeFile ?? writeFileAtomic;
    for (const record of loadJsonFolder(dir, options)) this.cache.set(options.nameOf(record), record);
  }

  /** Every record, by name. */
  all(): T[] {
    return [...this.cache.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([, record]) => record);
  }

  get(name: string): T | undefined {
    return this.cache.get(name);
  }

  /** Fails with ConflictError when the name is taken. */
  create(record: T): Promise<T> {
    const name = this.options.nameOf(record);
    return this.changes.run(name, async () => {
      if (this.cache.has(name)) throw new ConflictError(`${this.options.kind} "${name}" already exists`);
      return this.write(name, record);
    });
  }

  /** Writes `change(current)`; fails with NotFoundError when absent, unless `ifPresent` (then nothing happens). */
  update(name: string, change: (current: T) => T, { ifPresent = false } = {}): Promise<T | undefined> {
    return this.changes.run(name, async () => {
      const current = this.cache.get(name);
      if (current === undefined) {
        if (ifPresent) return undefined;
        throw new NotFoundError(`${this.options.kind} "${name}" does not exist`);
      }
      return this.write(name, change(current));
    });
  }

  /** False when absent. */
  delete(name: string): Promise<boolean> {
    return this.changes.run(name, async () => {
      if (!this.cache.has(name)) return false;
      await unlink(this.path(name)).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'ENOENT') throw error;
      });
      this.cache.delete(name);
      return true;
    });
  }

  private async write(name: string, record: T): Promise<T> {
    await this.writeFile(this.path(name), JSON.stringify(record));
    this.cache.set(name, record);
    return record;
  }

  private path(name: string): string {
    return join(this.dir, `${name}.json`);
  }

}
