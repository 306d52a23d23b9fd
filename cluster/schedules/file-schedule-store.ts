// Schedules of local mode: one JSON file each under <data-dir>/schedules (json-file-store.ts),
// held in memory for reads (like the application records and the templates). Changes to one
// schedule are serialised, so a status write never lands after a DELETE and brings it back.
import type { Schedule } from '../../schemas/index.js';
import type { WriteFileAtomic } from '../../lib/atomic-file.js';
import { JsonFileStore } from '../local/json-file-store.js';
import type { LocalLogger } from '../local/logger.js';
import type { ScheduleStatus, ScheduleStore, StoredSchedule } from './schedule-store.js';

export class FileScheduleStore implements ScheduleStore {
  private readonly files: JsonFileStore<StoredSchedule>;

  constructor(dir: string, options: { log: LocalLogger; writeFile?: WriteFileAtomic }) {
    this.files = new JsonFileStore(dir, {
      ...options,
      kind: 'schedule',
      nameOf: (stored) => stored.spec.name,
      isWhole: (stored) => typeof stored?.spec?.name === 'string' && typeof stored.spec.schedule === 'string' && typeof stored.createdAt === 'string' && Boolean(stored.status),
    });
  }

  async list(): Promise<StoredSchedule[]> {
    return this.files.all();
  }

  async get(name: string): Promise<StoredSchedule | undefined> {
    return this.files.get(name);
  }

  create(schedule: StoredSchedule): Promise<StoredSchedule> {
    return this.files.create(schedule);
  }

  async replace(spec: Schedule): Promise<StoredSchedule> {
    return (await this.files.update(spec.name, (current) => ({ ...current, spec })))!;
  }

  delete(name: string): Promise<boolean> {
    return this.files.delete(name);
  }

  async setStatus(name: string, status: ScheduleStatus): Promise<void> {
    await this.files.update(name, (current) => ({ ...current, status }), { ifPresent: true });
  }
}
