// What the API reads of the jobs' profiles (their last runs), and the in-memory copy both modes
// answer it from: local mode's files (cluster/local/job-profiles.ts), Kubernetes mode's
// JobProfile resources (cluster/kubernetes/job-profile-store.ts).
//
// A profile is a job AS ONE KEY SUBMITS IT: (submitter key, jobName). Any key may submit under
// any job name, so runs of one key never size, nor show in the figures of, another key's runs
// (docs/security.md). Runs submitted with no key (authentication off) share one profile per job.
import { createHash } from 'node:crypto';
import { type Recommendation, recommend, type RulesInput, rulesNow, type RunCost, type RunEvidence } from '../domain/index.js';
import type { ApplicationConfig } from '../schemas/index.js';

/** The id of the key that submitted the runs (null: submitted with no key). */
export type Submitter = string | null;

export interface JobProfiles {
  /** The runs `submittedBy` made of the job (its profile), oldest first. */
  runs(jobName: string, submittedBy: Submitter): RunEvidence[] | undefined;
  /** The cost of an ended run, once recorded. */
  costOf(appName: string): RunCost | undefined;
  /** The size `submittedBy`'s past runs of the job call for; undefined while none of them completed with a profile. */
  recommendation(jobName: string, submittedBy: Submitter): Recommendation | undefined;
}

/** What the recorder (profile-recorder.ts) writes an ended run into. */
export interface RecordedJobProfiles {
  costOf(appName: string): RunCost | undefined;
  record(jobName: string, submittedBy: Submitter, asked: ApplicationConfig, run: RunEvidence): Promise<void>;
}

/** One profile as kept (a file, or a JobProfile's spec). */
export interface JobProfileData {
  jobName: string;
  /** Whose runs these are; absent or null: runs submitted with no key (and profiles written before profiles were per key). */
  submittedBy?: Submitter;
  /** The newest run's config as asked (before sizing from history): what a recommendation compares with. */
  asked: ApplicationConfig;
  runs: RunEvidence[];
}

/** Job names are DNS labels (submission.json): safe as file and object names; anything else is not kept. */
export const JOB_NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const PLAIN_KEY_ID = /^[a-z0-9]{1,32}$/;

/**
 * The profile's file and object name: `<job>` for runs with no key (as before profiles were per
 * key), `<job>.<key id>` otherwise (a key id that is not plain lowercase letters and digits: a
 * digest of it). A DNS subdomain, so a JobProfile's name.
 */
export function profileName(jobName: string, submittedBy: Submitter): string {
  if (submittedBy === null) return jobName;
  const id = PLAIN_KEY_ID.test(submittedBy) ? submittedBy : `h${createHash('sha256').update(submittedBy).digest('hex').slice(0, 24)}`;
  return `${jobName}.${id}`;
}

/** The profiles in memory, and each kept run's cost by application. */
export class KeptJobProfiles implements JobProfiles {
  /** By profileName. */
  protected readonly jobs = new Map<string, JobProfileData>();
  private readonly costs = new Map<string, RunCost>();

  /**
   * `rules`: the pools recommendations are sized within; absent (an API without the node-pool
   * file), none are made. A watched source is read at each recommendation, never kept: after a
   * policy change the next one is sized within the new pools.
   */
  constructor(private readonly rules: RulesInput | undefined) {}

  runs(jobName: string, submittedBy: Submitter): RunEvidence[] | undefined {
    return this.jobs.get(profileName(jobName, submittedBy))?.runs;
  }

  costOf(appName: string): RunCost | undefined {
    return this.costs.get(appName);
  }

  recommendation(jobName: string, submittedBy: Submitter): Recommendation | undefined {
    const job = this.jobs.get(profileName(jobName, submittedBy));
    return job && this.rules && recommend(job.runs, job.asked, rulesNow(this.rules));
  }

  /** Holds `job` as its profile now (the runs it dropped lose their costs). */
  protected keep(job: JobProfileData): void {
    const name = profileName(job.jobName, job.submittedBy ?? null);
    for (const gone of this.jobs.get(name)?.runs ?? []) if (!job.runs.includes(gone)) this.costs.delete(gone.appName);
    this.jobs.set(name, job);
    for (const run of job.runs) this.costs.set(run.appName, run.cost);
  }

  /** Drops the profile named `name` (profileName). */
  protected forget(name: string): void {
    for (const run of this.jobs.get(name)?.runs ?? []) this.costs.delete(run.appName);
    this.jobs.delete(name);
  }
}
