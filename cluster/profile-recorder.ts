// Records each ended run into its job's profile, in both modes: waits for its event log to be
// closed (the mode's `readProfile`: local files, or object storage in Kubernetes mode), reads it
// into the run's profile (cluster/history/run-profile-reader.ts, the same pure builder), and
// keeps what the run asked for, what it ran with, what it used and what it cost. A run without
// a readable log is kept too (no profile): its cost is then what it requested, and a failure
// from memory still counts.
//
// Kubernetes mode has one writer: every replica hears of ended runs, only the one holding the
// Lease records them (`mayRecord`), and when a replica starts leading it catches up on the runs
// that ended recently while no one recorded them (`catchUp`).
import { executorSize, type RulesInput, rulesNow, runCost, type RunEvidence, type RunProfile } from '../domain/index.js';
import { type AppRecord, type Cluster, isTerminal } from './cluster.js';
import type { RecordedJobProfiles } from './job-profiles.js';

/** Ended runs older than this are not caught up on (they would fall behind newer runs anyway). */
export const CATCH_UP_MS = 60 * 60 * 1000;

export interface ProfileRecorderOptions {
  cluster: Pick<Cluster, 'events' | 'submission'>;
  profiles: RecordedJobProfiles;
  /** Read as each run is recorded (its cost's memory overhead): a watched policy's change counts from the next run on. */
  rules: RulesInput;
  /** The run's profile from its event log once Spark closed it; null: none readable. Absent: no history kept. */
  readProfile?: (appName: string) => Promise<RunProfile | null>;
  /** Checked before recording (Kubernetes mode: this replica holds the Lease); default: always. */
  mayRecord?: () => boolean;
  warn: (message: string, fields: { err: unknown; appName: string }) => void;
  now?: () => number;
}

export class ProfileRecorder {
  private readonly recording = new Map<string, Promise<void>>();
  private readonly unsubscribe: () => void;

  constructor(private readonly options: ProfileRecorderOptions) {
    this.unsubscribe = options.cluster.events.subscribe(undefined, (message) => {
      if (message.type === 'changed' && isTerminal(message.record.state)) this.take(message.record);
    });
  }

  /** Records the ended runs among `records` that ended within CATCH_UP_MS and are not recorded yet. */
  catchUp(records: Iterable<AppRecord>): void {
    const now = this.options.now?.() ?? Date.now();
    for (const record of records) {
      if (isTerminal(record.state) && record.endedAt && now - Date.parse(record.endedAt) <= CATCH_UP_MS) this.take(record);
    }
  }

  /** Resolves once every run that ended so far is recorded (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.recording.size > 0) await Promise.all(this.recording.values());
  }

  close(): void {
    this.unsubscribe();
  }

  private take(record: AppRecord): void {
    const { appName } = record;
    if (this.options.mayRecord?.() === false) return;
    if (this.recording.has(appName) || this.options.profiles.costOf(appName)) return;
    const work = this.record(record)
      .catch((error: unknown) => this.options.warn('could not record the run in its job\'s profile', { err: error, appName }))
      .finally(() => this.recording.delete(appName));
    this.recording.set(appName, work);
  }

  private async record(record: AppRecord): Promise<void> {
    const profile = await this.profileOf(record.appName);
    const submission = await this.options.cluster.submission(record.appName);
    const ran = executorSize(record.config);
    const asked = submission?.sizing?.history?.asked ?? ran;
    const started = Date.parse(record.startedAt ?? record.createdAt);
    const ended = Date.parse(record.endedAt ?? new Date(this.options.now?.() ?? Date.now()).toISOString());
    const durationMs = profile && profile.durationMs > 0 ? profile.durationMs : Math.max(0, ended - started);
    const run: RunEvidence = {
      appName: record.appName, state: record.state, ...(record.stateDetail ? { stateDetail: record.stateDetail } : {}),
      endedAt: record.endedAt ?? new Date(ended).toISOString(), durationMs, asked, ran, profile,
      cost: runCost(record.config, durationMs, profile, rulesNow(this.options.rules).sizing.memoryOverheadFactor),
    };
    const askedConfig = { ...record.config, executor: { ...record.config.executor, ...asked } };
    // The Lease may have moved while the log was read: the new leader records it.
    if (this.options.mayRecord?.() === false) return;
    // Into the submitter's own profile of the job: another key's runs never size this key's (cluster/job-profiles.ts).
    await this.options.profiles.record(record.jobName, record.submittedBy ?? null, askedConfig, run);
  }

  private async profileOf(appName: string): Promise<RunProfile | null> {
    if (!this.options.readProfile) return null;
    try {
      return await this.options.readProfile(appName);
    } catch (error) {
      this.options.warn('could not read the event log into the run\'s profile', { err: error, appName });
      return null;
    }
  }
}
