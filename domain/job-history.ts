// A job's memory of its past runs: what each asked for, what it ran with, what it used (its
// event log's profile) and what it cost. The service keeps the last few per job
// (cluster/local/job-profiles.ts) and admission reads them as an input like the rules.
import type { ApplicationConfig, ApplicationState } from '../schemas/index.js';
import type { RunCost } from './run-cost.js';
import type { RunProfile } from './run-profile.js';

/** `sizing.fromHistory`: off (not even recommended), recommend (the default: shown, not used), apply (admission uses it). */
export type FromHistory = 'off' | 'recommend' | 'apply';

export const fromHistoryOf = (config: ApplicationConfig | undefined): FromHistory => config?.sizing?.fromHistory ?? 'recommend';

/** The executor's size: what sizing from history decides. */
export interface ExecutorSize {
  cores: number;
  memory: string;
  instances: number;
}

export interface RunEvidence {
  appName: string;
  state: ApplicationState;
  stateDetail?: string;
  endedAt: string;
  durationMs: number;
  /** The executor as the submission asked for it (before sizing from history). */
  asked: ExecutorSize;
  /** The executor as it ran (after sizing from history, when applied). */
  ran: ExecutorSize;
  /** null: no event log read (none written, compressed, or unreadable). */
  profile: RunProfile | null;
  cost: RunCost;
}

/** How many runs a job's profile keeps (their costs stay readable; recommendations read the last few), and how many completed ones `apply` waits for. */
export const HISTORY_RUNS = 50;
export const MIN_RUNS_TO_APPLY = 2;

/** Runs kept for a job: the newest HISTORY_RUNS, oldest first, one per application. */
export function withRun(runs: RunEvidence[], run: RunEvidence): RunEvidence[] {
  return [...runs.filter((r) => r.appName !== run.appName), run]
    .sort((a, b) => a.endedAt.localeCompare(b.endedAt))
    .slice(-HISTORY_RUNS);
}

const MEMORY_DETAIL = /OutOfMemory|OOMKilled|exit code 137|exceeding memory/i;

/** The run ended from lack of memory: its log says so, or how its driver ended does. */
export const failedFromMemory = (run: RunEvidence): boolean =>
  run.state !== 'COMPLETED' && (run.profile?.memoryFailure === true || MEMORY_DETAIL.test(run.stateDetail ?? ''));

/** The executor size a sized config asks for (instances default 1, as Spark's). */
export function executorSize(config: ApplicationConfig): ExecutorSize {
  const executor = config.executor ?? {};
  return { cores: executor.cores ?? 1, memory: executor.memory ?? '1g', instances: executor.instances ?? 1 };
}
