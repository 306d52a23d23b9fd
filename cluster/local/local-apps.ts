// What local mode's parts share about its applications: the stored records, where each one's
// files are, and how a change is written and told (the events feed). Background work (no request
// waits for it) logs its failures here instead of leaving them unhandled.
import { join } from 'node:path';
import type { AdmissionRules } from '../../domain/index.js';
import { applyChange } from '../app-record.js';
import type { AppRecord } from '../cluster.js';
import { type AppEventType, EventFeed } from '../events.js';
import type { RecordedRuns } from '../history/run-claims.js';
import type { LocalLogger } from './logger.js';
import type { RecordStore, StoredApp } from './record-store.js';
import { releaseWorkDir } from './work-dir-space.js';

export class LocalApps {
  readonly events = new EventFeed();
  /** Which application each recorded Spark app id is, for the history's admission (checked against the record when asked). */
  private readonly appIdOwners = new Map<string, string>();

  constructor(
    readonly records: RecordStore,
    readonly rules: AdmissionRules,
    readonly logger: LocalLogger,
    private readonly dataDir: string,
    private readonly interactiveLabel: string | undefined,
  ) {
    for (const { record, appIds } of records.all()) for (const { sparkAppId } of appIds ?? []) this.appIdOwners.set(sparkAppId, record.appName);
  }

  /** The runs the service saw each application's drivers start (the history's admission asks). */
  readonly recordedRuns: RecordedRuns = {
    idsOf: (appName) => (this.records.get(appName)?.appIds ?? []).map((seen) => seen.sparkAppId),
    ownerOf: (sparkAppId) => {
      const appName = this.appIdOwners.get(sparkAppId);
      // A deleted application's ids are free again, as its log is gone.
      return appName !== undefined && this.recordedRuns.idsOf(appName).includes(sparkAppId) ? appName : undefined;
    },
  };

  /**
   * Records the Spark app id `attempt`'s driver took, once per attempt and unless it is another
   * application's; written beside the record, told to no one (the API shows nothing of it).
   */
  async recordAppId(appName: string, attempt: number, sparkAppId: string): Promise<boolean> {
    const current = this.records.get(appName);
    const owner = this.recordedRuns.ownerOf(sparkAppId);
    if (!current || (owner !== undefined && owner !== appName) || current.appIds?.some((seen) => seen.attempt === attempt)) return false;
    this.appIdOwners.set(sparkAppId, appName);
    await this.records.save({ ...current, appIds: [...current.appIds ?? [], { attempt, sparkAppId }] }, { keepOnFailure: true });
    return true;
  }

  /** A deleted application's ids leave the index too (a lookup would find them stale anyway; this keeps the index as small as the records). */
  forgetAppIds({ record, appIds }: StoredApp): void {
    for (const { sparkAppId } of appIds ?? []) if (this.appIdOwners.get(sparkAppId) === record.appName) this.appIdOwners.delete(sparkAppId);
  }

  /** How many app ids the index holds (for its test). */
  get indexedAppIds(): number {
    return this.appIdOwners.size;
  }

  get(appName: string): StoredApp | undefined {
    return this.records.get(appName);
  }

  /** Applies `change` to the record as it is now (and `also` beside it), writes it, then tells the feed. */
  async update(stored: StoredApp, change: Partial<AppRecord>, options: { keepOnFailure?: boolean } = {}, also: Partial<Pick<StoredApp, 'pod' | 'retryAt'>> = {}): Promise<void> {
    const current = this.records.get(stored.record.appName);
    if (!current) return; // deleted meanwhile
    const next = { ...current, ...also, record: applyChange(current.record, change) };
    await this.records.save(next, options);
    this.emit('changed', next.record);
  }

  emit(type: AppEventType, record: AppRecord): void {
    this.events.publish(type, record);
  }

  /** Background work has no request to answer: its failures are logged, never left unhandled. */
  background(work: Promise<unknown>, appName: string, what: string): void {
    work.catch((error: unknown) => this.logger.error({ err: error, appName }, `${what} (application ${appName})`));
  }

  isInteractive({ record }: StoredApp): boolean {
    return this.interactiveLabel !== undefined && record.labels?.[this.interactiveLabel] === 'true';
  }

  releaseWorkDir(appName: string): void {
    this.background(releaseWorkDir(this.workDir(appName)), appName, 'could not remove the work dir');
  }

  logFile(appName: string): string {
    return join(this.dataDir, 'logs', `${appName}.log`);
  }

  exitFile(appName: string): string {
    return join(this.dataDir, 'run', `${appName}.exit`);
  }

  launcherTokenFile(appName: string): string {
    return join(this.dataDir, 'run', `${appName}.launcher-token`);
  }

  workDir(appName: string): string {
    return join(this.dataDir, 'work', appName);
  }
}
