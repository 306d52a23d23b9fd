// Schedules of local mode: one JSON file each under <data-dir>/schedules, written atomically,
// held in memory for reads (like the application records and the templates). Changes to one
// schedule are serialised, so a status write never lands after a DELETE and brings it back.
import { readdirSync, readFileSync } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Schedule } from '../../schemas/index.js';
import { isTempFile, makePrivateDir, removeTempFiles, setAside, writeFileAtomic, type WriteFileAtomic } from '../../lib/atomic-file.js';
import { KeyedSerial } from '../../lib/keyed-serial.js';
import { ConflictError, NotFoundError } from '../cluster.js';
import type { LocalLogger } from '../local/logger.js';
import type { ScheduleStatus, ScheduleStore, StoredSchedule } from './schedule-store.js';

export class FileScheduleStore implements ScheduleStore {
  private readonly cache = new Map<string, StoredSchedule>();
  private readonly changes = new KeyedSerial();
  private readonly writeFile: WriteFileAtomic;

  constructor(private readonly dir: string, options: { log: LocalLogger; writeFile?: WriteFileAtomic }) {
    this.writeFile = options.writeFile ?? writeFileAtomic;
    makePrivateDir(dir);
    const stale = removeTempFiles(dir);
    if (stale.length > 0) options.log.warn({ dir, files: stale }, 'removed temp files left by an interrupted write');
    for (const name of readdirSync(dir)) {
      if (!name.endsWith('.json') || isTempFile(name)) continue;
      const path = join(dir, name);
      const stored = readSchedule(path);
      if (!stored) {
        options.log.error({ file: path, setAsideAs: setAside(path) }, `schedule ${path} cannot be read; set aside as ${path}.corrupt`);
        continue;
      }
      this.cache.set(stored.spec.name, stored);
    }
  }

  async list(): Promise<StoredSchedule[]> {
    return [...this.cache.values()].sort((a, b) => a.spec.name.localeCompare(b.spec.name));
  }

  async get(name: string): Promise<StoredSchedule | undefined> {
    return this.cache.get(name);
  }

  create(schedule: StoredSchedule): Promise<StoredSchedule> {
    return this.changes.run(schedule.spec.name, async () => {
      if (this.cache.has(schedule.spec.name)) throw new ConflictError(`schedule "${schedule.spec.name}" already exists`);
      return this.write(schedule);
    });
  }

  replace(spec: Schedule): Promise<StoredSchedule> {
    return this.changes.run(spec.name, async () => {
      const current = this.cache.get(spec.name);
      if (!current) throw new NotFoundError(`schedule "${spec.name}" does not exist`);
      return this.write({ ...current, spec });
    });
  }

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

  setStatus(name: string, status: ScheduleStatus): Promise<void> {
    return this.changes.run(name, async () => {
      const current = this.cache.get(name);
      if (current) await this.write({ ...current, status });
    });
  }

  private async write(schedule: StoredSchedule): Promise<StoredSchedule> {
    await this.writeFile(this.path(schedule.spec.name), JSON.stringify(schedule));
    this.cache.set(schedule.spec.name, schedule);
    return schedule;
  }

  private path(name: string): string {
    return join(this.dir, `${name}.json`);
  }
}

/** undefined for a file that is not a whole schedule. */
function readSchedule(path: string): StoredSchedule | undefined {
  try {
    const stored = JSON.parse(readFileSync(path, 'utf8')) as StoredSchedule;
    return typeof stored?.spec?.name === 'string' && typeof stored.spec.schedule === 'string' && typeof stored.createdAt === 'string' && stored.status ? stored : undefined;
  } catch (error) {
    if (error instanceof SyntaxError) return undefined;
    throw error;
  }
}
