// Admission's use of a job's past runs (pure): with `sizing.fromHistory: apply` and enough
// completed runs, the executor gets the recommended size (sizing-recommendation.ts), sized
// again through the pools like any request, so it never leaves them; otherwise the config is
// as asked, except that a run that failed from memory gives the next more memory at once (a job
// that asks too little climbs run by run, never past the largest pool, until it fits). Either way the decision and its reasons go into the sizing annotation.
import type { ApplicationConfig } from '../schemas/index.js';
import { executorSize, failedFromMemory, fromHistoryOf, type FromHistory, MIN_RUNS_TO_APPLY, type RunEvidence } from './job-history.js';
import { parseMemoryMib } from './quantities.js';
import type { AdmissionRules } from './rules.js';
import { recommend } from './sizing-recommendation.js';
import { sizePod } from './sizing.js';

export interface HistoryDecision {
  mode: FromHistory;
  applied: boolean;
  /** The executor as asked, before history (what the next recommendation compares against). */
  asked: { cores: number; memory: string; instances: number };
  basedOn: string[];
  reasons: string[];
}

/**
 * `config`: the effective, sized config as asked. `runs`: the job's kept runs (job-history.ts),
 * undefined when it has none. The decision is undefined when there is nothing to say (mode off,
 * or no runs), so a job without history is admitted exactly as before.
 */
export function sizeFromHistory(config: ApplicationConfig, runs: RunEvidence[] | undefined, rules: AdmissionRules): { config: ApplicationConfig; decision?: HistoryDecision } {
  const mode = fromHistoryOf(config);
  if (mode === 'off' || !runs || runs.length === 0) return { config };
  const asked = executorSize(config);
  const recommendation = recommend(runs, config, rules);
  const decide = (applied: boolean, reasons: string[]): HistoryDecision => ({ mode, applied, asked, basedOn: recommendation?.basedOn ?? [], reasons });
  if (!recommendation) return { config, decision: decide(false, ['No completed run of this job has an event log to size from yet, and none failed from memory.']) };
  if (mode === 'recommend') return { config, decision: decide(false, [`Recommended (not applied): ${describe(recommendation.suggested)}.`]) };
  let { suggested } = recommendation;
  if (recommendation.basedOn.length < MIN_RUNS_TO_APPLY) {
    // Too few runs to take anything away; but more memory after a failure from it is never a risk.
    const grows = runs.some(failedFromMemory) && parseMemoryMib(suggested.memory) > parseMemoryMib(asked.memory);
    if (!grows) return { config, decision: decide(false, [`Not applied: ${recommendation.basedOn.length} completed run with a profile, ${MIN_RUNS_TO_APPLY} needed.`]) };
    suggested = { ...asked, memory: suggested.memory };
  }
  const executor = { ...config.executor, cores: suggested.cores, memory: suggested.memory, instances: suggested.instances };
  // The CPU request follows the cores (the pool's share) when they change; an explicit one stays otherwise.
  if (suggested.cores !== asked.cores) delete executor.coreRequest;
  const sized = sizePod('executor', executor, rules);
  if (!sized.ok) return { config, decision: decide(false, [`Not applied: ${describe(suggested)} fits no pool.`]) };
  const next: ApplicationConfig = { ...config, executor: sized.pod };
  if (suggested.dynamicAllocation) {
    next.engineConf = { ...config.engineConf, 'spark.dynamicAllocation.maxExecutors': String(suggested.dynamicAllocation.maxExecutors) };
  }
  return { config: next, decision: decide(true, [`Applied: ${describe(suggested)} (asked ${describe(asked)}).`, ...recommendation.reasons]) };
}

const describe = (size: { cores: number; memory: string; instances: number }) =>
  `${size.instances} executor${size.instances === 1 ? '' : 's'} of ${size.cores} core${size.cores === 1 ? '' : 's'} and ${size.memory}`;
