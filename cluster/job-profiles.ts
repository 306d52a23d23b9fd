// What the API reads of the jobs' profiles (their last runs), and the in-memory copy both modes
// answer it from: local mode's files (cluster/local/job-profiles.ts), Kubernetes mode's
// JobProfile resources (cluster/kubernetes/job-profile-store.ts).
import { type Recommendation, recommend, type RulesInput, rulesNow, type RunCost, type RunEvidence } from '../domain/index.js';
import type { ApplicationConfig } from '../schemas/index.js';

export interface JobProfiles {
  runs(jobName: string): RunEvidence[] | undefined;
  /** The cost of an ended run, once recorded. */
  costOf(appName: string): RunCost | undefined;
  /** The size the job's past runs call for; undefined while no completed run has a profile. */
  recommendation(jobName: string): Recommendation | undefined;
}

/** What the recorder (profile-recorder.ts) writes an ended run into. */
export interface RecordedJobProfiles {
  costOf(appName: string): RunCost | undefined;
  record(jobName: string, asked: ApplicationConfig, run: RunEvidence): Promise<void>;
}

/** One job's profile as kept (a file, or a JobProfile's spec). */
export interface JobProfileData {
  jobName: string;
  /** The newest run's config as asked (before sizing from history): what a recommendation compares with. */
  asked: ApplicationConfig;
  runs: RunEvidence[];
}

/** Job names are DNS labels (submission.json): safe as file and object names; anything else is not kept. */
export const JOB_NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** The profiles in memory, and each kept run's cost by application. */
export class KeptJobProfiles implements JobProfiles {
  protected readonly jobs = new Map<string, JobProfileData>();
  private readonly costs = new Map<string, RunCost>();

  /**
   * `rules`: the pools recommendations are sized within; absent (an API without the node-pool
   * file), none are made. A watched source is read at each recommendation, never kept: after a
   * policy change the next one is sized within the new pools.
   */
  constructor(private readonly rules: RulesInput | undefined) {}

  runs(jobName: string): RunEvidence[] | undefined {
    return this.jobs.get(jobName)?.runs;
  }

  costOf(appName: string): RunCost | undefined {
    return this.costs.get(appName);
  }

  recommendation(jobName: string): Recommendation | undefined {
    const job = this.jobs.get(jobName);
    return job && this.rules && recommend(job.runs, job.asked, rulesNow(this.rules));
  }

  /** Holds `job` as the job's profile now (the runs it dropped lose their costs). */
  protected keep(job: JobProfileData): void {
    for (const gone of this.jobs.get(job.jobName)?.runs ?? []) if (!job.runs.includes(gone)) this.costs.delete(gone.appName);
    this.jobs.set(job.jobName, job);
    for (const run of job.runs) this.costs.set(run.appName, run.cost);
  }

  protected forget(jobName: string): void {
    for (const run of this.jobs.get(jobName)?.runs ?? []) this.costs.delete(run.appName);
    this.jobs.delete(jobName);
  }
}
