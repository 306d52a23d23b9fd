// Which log holds which run, for both event log indexes (a directory, object storage). A log is
// known by what it says (event-log-head.ts), and what it says is written by the driver, a program
// the service does not trust: a log whose name and content disagree, or that claims an id or an
// application another log holds, is refused (not indexed, so no link serves it) and reported.
// The History Server serves a run by its id alone, so an id two logs claim could show either.
// Where the service saw which run each driver took (RecordedRuns: local mode's sandboxed drivers,
// cluster/local/app-id-watch.ts), that decides, whichever log comes first; where it saw nothing,
// the first log to claim an id keeps it.
import { counter, METRIC_PREFIX } from '../../lib/metrics.js';
import { type RunIdentity, sparkAppIdOfEntry } from './event-log-head.js';

export interface IndexedRun {
  sparkAppId: string;
  /** The log's entry in the directory (a rolling log's folder, or a file). */
  entry: string;
  /** Spark closed the log: the run ended (a killed driver's log stays in progress). */
  completed: boolean;
  /** The log's size in bytes (all its files), as last read: what a replay of it costs. */
  bytes: number;
  /** When the log was last written (its newest file), ms since the epoch: about when the run ended. */
  modifiedMs: number;
}

/** What the index holds already: whose run an id is (null: a run the service did not submit), and each application's log. */
export interface HeldRuns {
  ownerOfRun(sparkAppId: string): { appName: string | null } | undefined;
  logOf(appName: string): { entry: string; sparkAppId: string } | undefined;
}

/** Which Spark app ids the service itself saw each application's drivers take (not what any log says). */
export interface RecordedRuns {
  /** The ids seen for this application's runs, one per attempt; empty: none seen (the first log to claim an id keeps it). */
  idsOf(appName: string): readonly string[];
  /** The application whose driver the service saw take this id, if any. */
  ownerOf(sparkAppId: string): string | undefined;
}

/** Why a log saying `identity` is not the run it claims to be, by what the service saw; undefined when nothing seen contradicts it. */
export function recordedRefusal(identity: RunIdentity, recorded: RecordedRuns | undefined): { reason: string; owner: string } | undefined {
  if (!recorded) return undefined;
  const { sparkAppId, appName } = identity;
  const owner = recorded.ownerOf(sparkAppId);
  if (owner !== undefined && owner !== appName) return { reason: `run ${sparkAppId} is the one the service saw application ${owner}'s driver start`, owner };
  const own = appName === undefined ? [] : recorded.idsOf(appName);
  if (appName !== undefined && own.length > 0 && !own.includes(sparkAppId)) {
    return { reason: `the service saw application ${appName}'s driver start run ${own.join(', ')}, not ${sparkAppId}`, owner: appName };
  }
  return undefined;
}

/** accept: index it; wait: read it again later (the same run under a second name, while Spark renames it); refuse: never. */
export type Judgement = { verdict: 'accept' } | { verdict: 'wait' } | { verdict: 'refuse'; reason: string; owner?: string | null };

/** Whether the log at `entry`, saying `identity`, may be indexed next to what is held. */
export function judgeLog(entry: string, identity: RunIdentity, held: HeldRuns, recorded?: RecordedRuns): Judgement {
  const named = sparkAppIdOfEntry(entry);
  if (named !== identity.sparkAppId) {
    // The report names whose run it borrows: the one its name is, else the one it claims.
    const owner = (named === undefined ? undefined : held.ownerOfRun(named)) ?? held.ownerOfRun(identity.sparkAppId);
    return { verdict: 'refuse', reason: `it is named after run ${named ?? '?'} but says it is run ${identity.sparkAppId}`, owner: owner?.appName };
  }
  // Before what is held: a forged log read first holds nothing against the run the service saw.
  const seen = recordedRefusal(identity, recorded);
  if (seen) return { verdict: 'refuse', ...seen };
  const owner = held.ownerOfRun(identity.sparkAppId);
  if (owner && owner.appName !== (identity.appName ?? null)) {
    return { verdict: 'refuse', reason: `run ${identity.sparkAppId} is another log's already`, owner: owner.appName };
  }
  const other = identity.appName === undefined ? undefined : held.logOf(identity.appName);
  if (other && other.entry !== entry) {
    if (other.sparkAppId === identity.sparkAppId) return { verdict: 'wait' };
    return { verdict: 'refuse', reason: `application ${identity.appName} has a log already (${other.entry})`, owner: identity.appName };
  }
  return { verdict: 'accept' };
}

/** What an index tells about a refused log: a warning with both applications' names. */
export interface Refusal {
  entry: string;
  reason: string;
  identity: RunIdentity;
  /** The application the claimed id or name is (null: a run the service did not submit; undefined: none). */
  owner: string | null | undefined;
}

export function describeRefusal(refusal: Refusal): string {
  const { identity, owner } = refusal;
  const claims = `it names application ${identity.appName ?? '(none)'}, App Name ${JSON.stringify(identity.sparkAppName ?? '')}`;
  const held = owner === undefined ? '' : `; the run is application ${owner ?? '(one the service did not submit)'}'s`;
  return `event log ${refusal.entry} refused, neither indexed nor served: ${refusal.reason} (${claims}${held})`;
}

const refusedLogs = counter<'store'>({
  name: `${METRIC_PREFIX}history_event_logs_refused_total`,
  help: "Event logs refused by the history (local, s3: the index; sandbox: the move out of a driver's work dir), named after or claiming another run or application",
  labelNames: ['store'],
});

/** Counts a refused log (the indexes do, and the sandbox's move of a driver's log). */
export const countRefusedLog = (store: 'local' | 's3' | 'sandbox'): void => { refusedLogs.inc({ store }); };

/** The index's memory: entries read, the runs they hold, by application and by id. */
export class RunClaims implements HeldRuns {
  private readonly byApp = new Map<string, IndexedRun>();
  private readonly byId = new Map<string, { entry: string; appName: string | null }>();
  /** Entries read already: what they hold, or null (not a log this index can place, or refused). */
  private readonly seen = new Map<string, { sparkAppId: string; appName: string | null } | null>();

  constructor(
    private readonly store: 'local' | 's3',
    private readonly onRefused: (refusal: Refusal) => void,
    private readonly recorded?: RecordedRuns,
  ) {}

  lookup(appName: string): IndexedRun | undefined {
    return this.byApp.get(appName);
  }

  runs(): IterableIterator<[string, IndexedRun]> {
    return this.byApp.entries();
  }

  ownerOfRun(sparkAppId: string): { appName: string | null } | undefined {
    return this.byId.get(sparkAppId);
  }

  logOf(appName: string): { entry: string; sparkAppId: string } | undefined {
    return this.byApp.get(appName);
  }

  /** undefined: never read; null: read and not indexed (for good); else the run it holds (appName null: not ours). */
  known(entry: string): { sparkAppId: string; appName: string | null } | null | undefined {
    return this.seen.get(entry);
  }

  entries(): string[] {
    return [...this.seen.keys()];
  }

  /** Not a log this index can place (unreadable, or no identity within the head's cap). */
  unplaceable(entry: string): void {
    this.seen.set(entry, null);
  }

  /** Indexes a log that was read (`state`: its state, for one of ours), or refuses it (reported). */
  admit(entry: string, identity: RunIdentity, state: Omit<IndexedRun, 'sparkAppId' | 'entry'>): void {
    const judgement = judgeLog(entry, identity, this, this.recorded);
    if (judgement.verdict === 'wait') return;
    if (judgement.verdict === 'refuse') {
      this.seen.set(entry, null);
      countRefusedLog(this.store);
      this.onRefused({ entry, reason: judgement.reason, identity, owner: judgement.owner });
      return;
    }
    const appName = identity.appName ?? null;
    this.seen.set(entry, { sparkAppId: identity.sparkAppId, appName });
    this.byId.set(identity.sparkAppId, { entry, appName });
    if (appName !== null) this.byApp.set(appName, { sparkAppId: identity.sparkAppId, entry, ...state });
  }

  /** The run an entry holds, for updating its state (undefined: none of ours). */
  runOf(entry: string): IndexedRun | undefined {
    const held = this.seen.get(entry);
    const run = held?.appName ? this.byApp.get(held.appName) : undefined;
    return run?.entry === entry ? run : undefined;
  }

  /** The entry is gone (removed, or renamed by Spark): what it held is free again. */
  forget(entry: string): void {
    const held = this.seen.get(entry);
    this.seen.delete(entry);
    if (!held) return;
    if (this.byId.get(held.sparkAppId)?.entry === entry) this.byId.delete(held.sparkAppId);
    if (held.appName !== null && this.byApp.get(held.appName)?.entry === entry) this.byApp.delete(held.appName);
  }
}
