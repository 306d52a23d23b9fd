// Records each ended run into its job's profile: waits for its event log to be closed and
// indexed, reads it (streaming, cluster/history/run-profile-reader.ts), and keeps what it asked
// for, what it ran with, what it used and what it cost. A run without a readable log is kept
// too (no profile): its cost is then what it requested, and a failure from memory still counts.
import { type AdmissionRules, executorSize, runCost, type RunEvidence, type RunProfile } from '../../domain/index.js';
import { type AppRecord, type Cluster, isTerminal } from '../cluster.js';
import { readRunProfile } from '../history/run-profile-reader.js';
import type { LocalJobProfiles } from './job-profiles.js';
import type { LocalLogger } from './logger.js';

export interface ProfileRecorderOptions {
  cluster: Pick<Cluster, 'events' | 'submission'>;
  profiles: LocalJobProfiles;
  rules: AdmissionRules;
  /** Where the run's event log is once Spark closed it (local-history.ts); absent: no history kept. */
  eventLog?: (appName: string) => Promise<{ dir: string; entry: string } | undefined>;
  log: LocalLogger;
}

export class ProfileRecorder {
  private readonly recording = new Map<string, Promise<void>>();
  private readonly unsubscribe: () => void;

  constructor(private readonly options: ProfileRecorderOptions) {
    this.unsubscribe = options.cluster.events.subscribe(undefined, (message) => {
      if (message.type !== 'changed' || !isTerminal(message.record.state)) return;
      const { appName } = message.record;
      if (this.recording.has(appName) || options.profiles.costOf(appName)) return;
      const work = this.record(message.record)
        .catch((error: unknown) => options.log.warn({ err: error, appName }, 'could not record the run in its job\'s profile'))
        .finally(() => this.recording.delete(appName));
      this.recording.set(appName, work);
    });
  }

  /** Resolves once every run that ended so far is recorded (tests, shutdown). */
  async idle(): Promise<void> {
    await Promise.all(this.recording.values());
  }

  close(): void {
    this.unsubscribe();
  }

  private async record(record: AppRecord): Promise<void> {
    const profile = await this.profileOf(record.appName);
    const submission = await this.options.cluster.submission(record.appName);
    const ran = executorSize(record.config);
    const asked = submission?.sizing?.history?.asked ?? ran;
    const started = Date.parse(record.startedAt ?? record.createdAt);
    const ended = Date.parse(record.endedAt ?? new Date().toISOString());
    const durationMs = profile && profile.durationMs > 0 ? profile.durationMs : Math.max(0, ended - started);
    const run: RunEvidence = {
      appName: record.appName, state: record.state, ...(record.stateDetail ? { stateDetail: record.stateDetail } : {}),
      endedAt: record.endedAt ?? new Date(ended).toISOString(), durationMs, asked, ran, profile,
      cost: runCost(record.config, durationMs, profile, this.options.rules.sizing.memoryOverheadFactor),
    };
    const askedConfig = { ...record.config, executor: { ...record.config.executor, ...asked } };
    await this.options.profiles.record(record.jobName, askedConfig, run);
  }

  private async profileOf(appName: string): Promise<RunProfile | null> {
    const log = await this.options.eventLog?.(appName);
    if (!log) return null;
    try {
      return await readRunProfile(log.dir, log.entry);
    } catch (error) {
      this.options.log.warn({ err: error, appName }, 'could not read the event log into the run\'s profile');
      return null;
    }
  }
}
