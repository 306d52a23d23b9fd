// The driver logs' total budget (issue 25): each log is capped (log-cap.ts), but logs lie in
// <data dir>/logs on the records' own filesystem, and many apps times the cap could still fill
// it (every record write then fails: a 507 for everyone). So all drivers' logs together keep
// within `--log-budget` bytes. Logs stay on the records' filesystem rather than in the work
// dirs' capped space: that space exists only as root and goes when the driver ends, and a log is
// read after its run. A budget holds only if the space is taken before it is written: a driver
// starting is granted its cap (and room for the service's notes) out of what the others hold, a
// running log holding its whole grant, an ended one its size. Room is made oldest ended run
// first: a log is first shrunk to its head and tail (the middle is what is least read), and only
// when every ended log is that small are the oldest replaced by a note saying they were removed.
// A start that still finds no room (running drivers hold the budget) runs with the room left,
// possibly none: its log says so, and the run goes on. Pure: log-budget-files.ts measures the
// files and does what this decides.

/** Bytes a log keeps of its head, and of its tail, when it is shrunk to make room. */
export const SHRUNK_KEEP_BYTES = 32 * 1024;
/** Room for the service's own lines in one log (the capper's two notes, the budget's note): each well under. */
export const NOTE_ROOM = 1024;

export interface LogOnDisk {
  appName: string;
  /** Bytes its file takes now. */
  bytes: number;
  /** A running driver's grant (its cap, notes included): it may write up to it. Undefined: its run ended. */
  granted?: number;
  /** When its run ended (ISO 8601): the oldest give room first. */
  endedAt: string;
}

export interface LogPlan {
  /** Bytes the starting driver's log may take (what log-cap.ts caps), 0 when no room is left. */
  cap: number;
  /** Ended logs to shrink to their head and tail, oldest first. */
  shrink: string[];
  /** Ended logs to replace by a note that they were removed, oldest first. */
  drop: string[];
}

/** The most a shrunk log takes: its head, the note, its tail. */
export const shrunkBytes = (): number => 2 * SHRUNK_KEEP_BYTES + NOTE_ROOM;

/** What a log holds of the budget: a running one its grant (or more, if it wrote more before the budget), an ended one its size. */
const held = (log: LogOnDisk): number => Math.max(log.bytes, log.granted ?? 0);

/**
 * How much of `budget` a starting driver's log gets, `wanted` at most (its cap), and which ended
 * logs give room for it. Each step is taken only while the start does not fit yet.
 */
export function planLogBudget(budget: number, logs: readonly LogOnDisk[], wanted: number): LogPlan {
  let used = logs.reduce((sum, log) => sum + held(log), 0);
  const need = wanted + NOTE_ROOM;
  const fits = () => used + need <= budget;
  const ended = logs.filter((log) => log.granted === undefined).sort((a, b) => a.endedAt.localeCompare(b.endedAt) || a.appName.localeCompare(b.appName));
  const size = new Map(ended.map((log) => [log.appName, log.bytes]));
  const shrink: string[] = [];
  const drop: string[] = [];
  for (const log of ended) {
    if (fits()) break;
    if (log.bytes <= shrunkBytes()) continue; // as small as shrinking makes it already
    used -= log.bytes - shrunkBytes();
    size.set(log.appName, shrunkBytes());
    shrink.push(log.appName);
  }
  for (const log of ended) {
    if (fits()) break;
    const bytes = size.get(log.appName)!;
    if (bytes <= NOTE_ROOM) continue; // a note already
    used -= bytes - NOTE_ROOM;
    drop.push(log.appName);
  }
  // A dropped log need not be shrunk first.
  const shrinkOnly = shrink.filter((name) => !drop.includes(name));
  return { cap: Math.max(0, Math.min(wanted, budget - used - NOTE_ROOM)), shrink: shrinkOnly, drop };
}
