// Application records of local mode: one JSON file per application, written atomically,
// all held in memory for reads. Survives restarts of the service.
//
// A write that fails (full disk, EMFILE) rejects the save() that asked for it, and only that:
// a new record becomes visible once it is on disk; a changed one is shown at once and put
// back as it was if its write fails, unless the caller keeps it (background changes whose
// facts already happened, such as a driver's end: memory stays true, the disk catches up
// with the next write or the next start).
import { unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { writeFileAtomic, type WriteFileAtomic } from '../../lib/atomic-file.js';
import { loadJsonFolder } from './json-file-store.js';
import type { AppRecord } from '../cluster.js';
import type { LocalLogger } from './logger.js';
import { KeyedSerial } from '../../lib/keyed-serial.js';

/** How to find a driver process again after the service restarts. */
export interface RunInfo {
  pid: number;
  /** Kernel start time of the process (clock ticks since boot): pids are reused, this is not. */
  startTicks: number;
  cores: number;
  exitFile: string;
  logFile: string;
  /** Bytes its log was granted (its cap, or less under the logs' budget: log-budget.ts); it holds them while it runs. */
  logCap?: number;
  stopRequested?: boolean;
  /** Why the service stopped it, when not at a user's request (its end's detail; default: "stopped by a user"). */
  stopReason?: string;
  /** Port of the driver's Spark UI on 127.0.0.1. */
  uiPort?: number;
  /** The secret the driver's UI gate asks of every request (sandboxed drivers; ui-gate.ts). */
  uiGate?: string;
}

export interface StoredApp {
  record: AppRecord;
  pod: V1Pod;
  run?: RunInfo;
  /** When the next attempt may start (restartPolicy.retryIntervalSeconds), so a restart keeps the wait. */
  retryAt?: string;
  /**
   * The Spark app id the service saw each attempt's driver take (app-id-watch.ts), oldest first:
   * whose run an event log is, whatever the log says (cluster/history/run-claims.ts).
   */
  appIds?: Array<{ attempt: number; sparkAppId: string }>;
}

export interface RecordStoreOptions {
  log: LocalLogger;
  /** Where writes go; tests inject failures here (a full disk, EMFILE). */
  writeFile?: WriteFileAtomic;
}

export class RecordStore {
  private readonly apps = new Map<string, StoredApp>();
  /** Writes per app are chained so that an older state never lands after a newer one. */
  private readonly writes = new KeyedSerial();
  private readonly writeFile: WriteFileAtomic;
  private readonly log: LocalLogger;

  constructor(private readonly dir: string, options: RecordStoreOptions) {
    this.log = options.log;
    this.writeFile = options.writeFile ?? writeFileAtomic;
    for (const stored of loadJsonFolder(dir, { log: this.log, kind: 'application record', isWhole: isWholeRecord })) {
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

  /** A new record: visible once it is durable on disk; rejects with the write's error. */
  create(stored: StoredApp): Promise<void> {
    const name = stored.record.appName;
    return this.writes.run(name, async () => {
      await this.writeFile(this.path(name), JSON.stringify(stored));
      this.apps.set(name, stored);
    });
  }

  /**
   * A change to a known record, shown at once; resolves once it is durable on disk. On a failed
   * write the record is put back as it was (unless keepOnFailure) and the error is the caller's.
   * A record removed meanwhile stays removed: nothing is written.
   */
  save(stored: StoredApp, { keepOnFailure = false } = {}): Promise<void> {
    const name = stored.record.appName;
    const before = this.apps.get(name);
    if (!before) return Promise.resolve();
    this.apps.set(name, stored);
    const data = JSON.stringify(stored);
    const write = this.writes.run(name, async () => {
      if (this.apps.has(name)) await this.writeFile(this.path(name), data);
    });
    return write.catch((error: unknown) => {
      if (!keepOnFailure && this.apps.get(name) === stored) this.apps.set(name, before);
      throw error;
    });
  }

  /** Gone from memory at once (so no later change writes it again), then from disk. */
  async remove(appName: string): Promise<void> {
    const stored = this.apps.get(appName);
    this.apps.delete(appName);
    try {
      await this.writes.run(appName, () => unlink(this.path(appName)).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'ENOENT') throw error;
      }));
    } catch (error) {
      if (stored && !this.apps.has(appName)) this.apps.set(appName, stored); // still on disk: still here
      throw error;
    }
  }

  /** Waits for every pending write (shutdown, tests). */
  async flush(): Promise<void> {
    await this.writes.idle();
  }

  private path(appName: string): string {
    return join(this.dir, `${appName}.json`);
  }
}

/** Whether parsed JSON is a whole record (not truncated, edited by hand, or of another format). */
function isWholeRecord(stored: StoredApp | null): boolean {
  const record = stored?.record;
  return typeof record?.appName === 'string' && typeof record.state === 'string' && typeof record.createdAt === 'string' && Boolean(stored?.pod);
}
