// Local mode's per-job profiles: beside the application records, `<data dir>/profiles/<job>.json`
// holds a job's last runs (domain/job-history.ts) and the config its newest run asked for.
// Held in memory for admission (which reads them synchronously, like the templates) and the
// API; written atomically, so a restart keeps them. A run is recorded once it ended and its
// event log was read (profile-recorder.ts).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type AdmissionRules, type Recommendation, recommend, type RunCost, type RunEvidence, withRun } from '../../domain/index.js';
import type { ApplicationConfig } from '../../schemas/index.js';
import { isTempFile, makePrivateDir, removeTempFiles, writeFileAtomic } from '../../lib/atomic-file.js';
import { KeyedSerial } from '../../lib/keyed-serial.js';
import type { LocalLogger } from './logger.js';
import type { JobProfiles } from '../job-profiles.js';

interface JobFile {
  jobName: string;
  /** The newest run's config as asked (before sizing from history): what a recommendation compares with. */
  asked: ApplicationConfig;
  runs: RunEvidence[];
}

/** Job names are DNS labels (submission.json): safe as file names; anything else is not kept. */
const JOB_NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

export class LocalJobProfiles implements JobProfiles {
  private readonly jobs = new Map<string, JobFile>();
  private readonly costs = new Map<string, RunCost>();
  private readonly writes = new KeyedSerial();

  constructor(private readonly dir: string, private readonly rules: AdmissionRules, log: LocalLogger) {
    makePrivateDir(dir);
    removeTempFiles(dir);
    for (const name of readdirSync(dir)) {
      if (!name.endsWith('.json') || isTempFile(name)) continue;
      try {
        const job = JSON.parse(readFileSync(join(dir, name), 'utf8')) as JobFile;
        if (typeof job.jobName !== 'string' || !Array.isArray(job.runs)) throw new Error('not a job profile');
        this.keep(job);
      } catch (error) {
        log.warn({ err: error, file: name }, 'a job profile cannot be read; the job starts a new one');
      }
    }
  }

  runs(jobName: string): RunEvidence[] | undefined {
    return this.jobs.get(jobName)?.runs;
  }

  costOf(appName: string): RunCost | undefined {
    return this.costs.get(appName);
  }

  recommendation(jobName: string): Recommendation | undefined {
    const job = this.jobs.get(jobName);
    return job && recommend(job.runs, job.asked, this.rules);
  }

  /** Adds an ended run to its job's profile (the newest HISTORY_RUNS stay) and writes it. */
  async record(jobName: string, asked: ApplicationConfig, run: RunEvidence): Promise<void> {
    if (!JOB_NAME.test(jobName)) return;
    const before = this.jobs.get(jobName);
    const job: JobFile = { jobName, asked, runs: withRun(before?.runs ?? [], run) };
    for (const gone of before?.runs ?? []) if (!job.runs.includes(gone)) this.costs.delete(gone.appName);
    this.keep(job);
    await this.writes.run(jobName, () => writeFileAtomic(join(this.dir, `${jobName}.json`), JSON.stringify(job)));
  }

  private keep(job: JobFile): void {
    this.jobs.set(job.jobName, job);
    for (const run of job.runs) this.costs.set(run.appName, run.cost);
  }
}
