// Local mode's per-job profiles: beside the application records, `<data dir>/profiles/<job>.json`
// holds a job's last runs (domain/job-history.ts) and the config its newest run asked for.
// Held in memory for admission (which reads them synchronously, like the templates) and the
// API; written atomically, so a restart keeps them. A run is recorded once it ended and its
// event log was read (cluster/profile-recorder.ts).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type AdmissionRules, type RunEvidence, withRun } from '../../domain/index.js';
import type { ApplicationConfig } from '../../schemas/index.js';
import { isTempFile, makePrivateDir, removeTempFiles, writeFileAtomic } from '../../lib/atomic-file.js';
import { KeyedSerial } from '../../lib/keyed-serial.js';
import type { LocalLogger } from './logger.js';
import { JOB_NAME, type JobProfileData, KeptJobProfiles, type RecordedJobProfiles } from '../job-profiles.js';

export class LocalJobProfiles extends KeptJobProfiles implements RecordedJobProfiles {
  private readonly writes = new KeyedSerial();

  constructor(private readonly dir: string, rules: AdmissionRules, log: LocalLogger) {
    super(rules);
    makePrivateDir(dir);
    removeTempFiles(dir);
    for (const name of readdirSync(dir)) {
      if (!name.endsWith('.json') || isTempFile(name)) continue;
      try {
        const job = JSON.parse(readFileSync(join(dir, name), 'utf8')) as JobProfileData;
        if (typeof job.jobName !== 'string' || !Array.isArray(job.runs)) throw new Error('not a job profile');
        this.keep(job);
      } catch (error) {
        log.warn({ err: error, file: name }, 'a job profile cannot be read; the job starts a new one');
      }
    }
  }

  /** Adds an ended run to its job's profile (the newest HISTORY_RUNS stay) and writes it. */
  async record(jobName: string, asked: ApplicationConfig, run: RunEvidence): Promise<void> {
    if (!JOB_NAME.test(jobName)) return;
    const job: JobProfileData = { jobName, asked, runs: withRun(this.jobs.get(jobName)?.runs ?? [], run) };
    this.keep(job);
    await this.writes.run(jobName, () => writeFileAtomic(join(this.dir, `${jobName}.json`), JSON.stringify(job)));
  }
}
