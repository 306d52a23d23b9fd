// Application records of local mode: one JSON file per application, written atomically,
// all held in memory for reads. Survives restarts of the service.
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { isTempFile, writeFileAtomic } from '../../lib/atomic-file.js';
import type { AppRecord } from '../cluster.js';

/** How to find a driver process again after the service restarts. */
export interface RunInfo {
  pid: number;
  /** Kernel start time of the process (clock ticks since boot): pids are reused, this is not. */
  startTicks: number;
  cores: number;
  exitFile: string;
  logFile: string;
  stopRequested?: boolean;
  /** Port of the driver's Spark UI on 127.0.0.1. */
  uiPort?: number;
}

export interface StoredApp {
  record: AppRecord;
  pod: V1Pod;
  run?: RunInfo;
}

export class RecordStore {
  private readonly apps = new Map<string, StoredApp>();
  /** Writes per app are chained so that an older state never lands after a newer one. */
  private readonly writes = new Map<string, Promise<void>>();

  constructor(private readonly dir: string) {
    mkdirSync(dir, { recursive: true });
    for (const name of readdirSync(dir)) {
      if (!name.endsWith('.json') || isTempFile(name)) continue;
      const stored = JSON.parse(readFileSync(join(dir, name), 'utf8')) as StoredApp;
      // Records written before applications had labels and a submitter.
      stored.record.labels ??= {};
      stored.record.submittedBy ??= null;
      this.apps.set(stored.record.appName, stored);
    }
  }

  get(appName: string): StoredApp | undefined {
    return this.apps.get(appName);
  }

  all(): StoredApp[] {
    return [...this.apps.values()];
  }

  /** Resolves once the record is durable on disk. */
  save(stored: StoredApp): Promise<void> {
    const name = stored.record.appName;
    this.apps.set(name, stored);
    const data = JSON.stringify(stored);
    const previous = this.writes.get(name) ?? Promise.resolve();
    const next = previous.then(() => (this.apps.get(name) ? writeFileAtomic(this.path(name), data) : undefined));
    this.writes.set(name, next.finally(() => { if (this.writes.get(name) === next) this.writes.delete(name); }));
    return next;
  }

  async remove(appName: string): Promise<void> {
    this.apps.delete(appName);
    await (this.writes.get(appName) ?? Promise.resolve()).catch(() => undefined);
    await unlink(this.path(appName)).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error;
    });
  }

  /** Waits for every pending write (shutdown, tests). */
  async flush(): Promise<void> {
    await Promise.allSettled([...this.writes.values()]);
  }

  private path(appName: string): string {
    return join(this.dir, `${appName}.json`);
  }
}
