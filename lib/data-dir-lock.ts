// One process per data dir: two local-mode services on the same records would each run the
// other's queue and overwrite each other's files. The lock is a file holding the owner's pid and
// its kernel start time (a pid alone is reused after a reboot or a wrap-around). A lock whose
// process is gone is stale and taken over; one whose process runs refuses the start, naming it.
import { mkdirSync, openSync, readFileSync, renameSync, unlinkSync, writeSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { PRIVATE_DIR, PRIVATE_FILE } from './atomic-file.js';

export const LOCK_FILE = 'service.lock';

export interface LockOwner { pid: number; startTicks?: number }

export class DataDirLockedError extends Error {
  constructor(readonly dataDir: string, readonly owner: LockOwner) {
    super(`the data dir ${dataDir} is in use by process ${owner.pid} (another submission-service local); `
      + 'stop that process or give this one another --data-dir');
  }
}

/** Start time of a process in clock ticks after boot (/proc/PID/stat field 22); undefined when unknown. */
export function processStartTicks(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // the name may hold spaces
    return fields[0] === 'Z' ? undefined : Number(fields[19]);
  } catch {
    return undefined;
  }
}

function running(owner: LockOwner): boolean {
  if (owner.pid === process.pid) return false; // our own pid from an earlier life: we are not it
  const ticks = processStartTicks(owner.pid);
  if (ticks !== undefined) return owner.startTicks === undefined || ticks === owner.startTicks;
  try {
    process.kill(owner.pid, 0); // no /proc here: whether the pid exists at all
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readOwner(file: string): LockOwner | undefined {
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as Partial<LockOwner>;
    return typeof parsed.pid === 'number' ? { pid: parsed.pid, startTicks: parsed.startTicks } : { pid: -1 };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    return { pid: -1 }; // unreadable or half-written by a crash: nobody holds it
  }
}

/**
 * Takes the data dir's lock for this process, or throws DataDirLockedError naming the live
 * holder. Returns the release function (also run at exit); it removes the file only if it is
 * still ours.
 */
export function lockDataDir(dataDir: string): () => void {
  mkdirSync(dataDir, { recursive: true, mode: PRIVATE_DIR });
  const file = join(dataDir, LOCK_FILE);
  const me: LockOwner = { pid: process.pid, startTicks: processStartTicks(process.pid) };
  for (let attempt = 0; ; attempt++) {
    try {
      const fd = openSync(file, 'wx', PRIVATE_FILE); // exclusive: of two starters, one creates it
      try { writeSync(fd, JSON.stringify(me)); } finally { closeSync(fd); }
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || attempt >= 5) throw error;
    }
    const owner = readOwner(file);
    if (owner && running(owner)) throw new DataDirLockedError(dataDir, owner);
    // Stale: move it aside (only one taker's rename finds it) and try the exclusive create again.
    // Two starters that both judged the same file stale within microseconds could still both
    // win; the lock guards against a second service started by hand, not a start-up race.
    const aside = `${file}.stale-${process.pid}`;
    try { renameSync(file, aside); unlinkSync(aside); } catch { /* another starter took it first */ }
  }
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    process.removeListener('exit', release);
    const owner = readOwner(file);
    if (owner?.pid === me.pid && owner.startTicks === me.startTicks) {
      try { unlinkSync(file); } catch { /* already gone */ }
    }
  };
  process.on('exit', release);
  return release;
}
