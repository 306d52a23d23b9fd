// What the API reads of the jobs' profiles (their last runs, local mode: cluster/local/job-profiles.ts).
import type { Recommendation, RunCost, RunEvidence } from '../domain/index.js';

export interface JobProfiles {
  runs(jobName: string): RunEvidence[] | undefined;
  /** The cost of an ended run, once recorded. */
  costOf(appName: string): RunCost | undefined;
  /** The size the job's past runs call for; undefined while no completed run has a profile. */
  recommendation(jobName: string): Recommendation | undefined;
}
