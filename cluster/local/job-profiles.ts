// Local mode's job profiles: beside the application records, `<data dir>/profiles/<job>.<key id>.json`
// holds the last runs one key made of a job (domain/job-history.ts) and the config its newest
// run asked for (`<job>.json`: runs with no key; cluster/job-profiles.ts says why per key).
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
import { JOB_NAME, type JobProfileData, KeptJobProfiles, profileName, type RecordedJobProfiles, type Submitter } from '../job-profiles.js';

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
        // A file whose name is not its own profile's (copied, or edited by hand) would stand in for another key's.
        if (`${profileName(job.jobName, job.submittedBy ?? null)}.json` !== name) throw new Error('named after another profile');
        this.keep(job);
      } catch (error) {
        log.warn({ err: error, file: name }, 'a job profile cannot be read; the job starts a new one');
      }
    }
  }

  /** Adds an ended run to its submitter's profile of the job (the newest HISTORY_RUNS stay) and writes it. */
  async record(jobName: string, submittedBy: Submitter, asked: ApplicationConfig, run: RunEvidence): Promise<void> {
    if (!JOB_NAME.test(jobName)) return;
    const name = profileName(jobName, submittedBy);
    const job: JobProfileData = { jobName, submittedBy, asked, runs: withRun(this.jobs.get(name)?.runs ?? [], run) };
    this.keep(job);
    await this.writes.run(name, () => writeFileAtomic(join(this.dir, `${name}.json`), JSON.stringify(job)));
  }
}
