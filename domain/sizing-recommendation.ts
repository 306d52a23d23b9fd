// The executor size a job's past runs call for (pure): as many cores as tasks ever ran at once
// on one executor, as much memory as the highest JVM heap (and process RSS, where recorded)
// plus a margin, as many executors as tasks ran at once across them; never more than asked,
// except memory where runs spilled or died from it. With the evidence and the saving.
import type { ApplicationConfig } from '../schemas/index.js';
import { type ExecutorSize, executorSize, failedFromMemory, type RunEvidence } from './job-history.js';
import { formatMemoryMib, parseMemoryMib } from './quantities.js';
import type { AdmissionRules } from './rules.js';
import { runCost } from './run-cost.js';
import { podMemoryMib } from './spark-properties.js';

/** Headroom over the highest figure any run reached. */
export const SIZING_MARGIN = 0.25;
/** No executor is sized below this much memory (Spark's own floor is 450 MiB of heap). */
export const MIN_MEMORY_MIB = 512;
/** How much more memory a run that spilled or died from memory gets. */
export const GROWTH = 1.5;
const ROUND_MIB = 128;
const EVIDENCE_RUNS = 5;

export interface RunFigures {
  appName: string;
  state: string;
  durationMs: number;
  peakJvmHeapMib: number;
  peakJvmOffHeapMib: number;
  peakProcessRssMib: number;
  peakTasksPerExecutor: number;
  peakTasks: number;
  /** Task CPU time over the cores held × time (0..1). */
  cpuUtilization: number;
  executorIdleMs: number;
  spilledMib: number;
  gcMs: number;
  requestedCoreHours: number;
  usedCoreHours: number | null;
}

export interface Recommendation {
  /** The runs the figures come from, oldest first. */
  basedOn: string[];
  current: ExecutorSize;
  suggested: ExecutorSize & { dynamicAllocation?: { minExecutors: number; maxExecutors: number } };
  evidence: RunFigures[];
  saving: { requestedCoreHoursPerRun: number; suggestedCoreHoursPerRun: number; requestedGibHoursPerRun: number; suggestedGibHoursPerRun: number; coreHoursPercent: number };
  reasons: string[];
}

const mib = (bytes: number) => Math.round(bytes / 2 ** 20);
const roundUp = (value: number) => Math.ceil(value / ROUND_MIB) * ROUND_MIB;

function figures(run: RunEvidence): RunFigures {
  const p = run.profile;
  return {
    appName: run.appName, state: run.state, durationMs: run.durationMs,
    peakJvmHeapMib: mib(p?.peakJvmHeapBytes ?? 0), peakJvmOffHeapMib: mib(p?.peakJvmOffHeapBytes ?? 0), peakProcessRssMib: mib(p?.peakProcessRssBytes ?? 0),
    peakTasksPerExecutor: p?.peakTasksPerExecutor ?? 0, peakTasks: p?.peakTasks ?? 0,
    cpuUtilization: p && p.coreHeldMs > 0 ? Math.round((p.taskCpuMs / p.coreHeldMs) * 1000) / 1000 : 0,
    executorIdleMs: p?.executorIdleMs ?? 0, spilledMib: mib((p?.memorySpilledBytes ?? 0) + (p?.diskSpilledBytes ?? 0)), gcMs: p?.gcMs ?? 0,
    requestedCoreHours: run.cost.requestedCoreHours, usedCoreHours: run.cost.usedCoreHours,
  };
}

/** The smallest Spark memory whose pod (memory plus overhead) holds `podMib`. */
function memoryForPod(podMib: number, factor: number): number {
  const candidates = [podMib - 384, Math.ceil(podMib / (1 + factor))].filter((m) => m > 0 && podMemoryMib(m, factor) >= podMib);
  return candidates.length > 0 ? Math.min(...candidates) : podMib;
}

/** The most Spark memory an executor of `cores` can get in any pool. */
const memoryCeiling = (cores: number, rules: AdmissionRules): number =>
  Math.max(0, ...rules.pools.filter((p) => p.cpu >= cores).map((p) => p.maximumSchedulableMemoryRequestMib));

function suggestMemory(runs: RunEvidence[], used: RunEvidence[], current: ExecutorSize, rules: AdmissionRules, reasons: string[]): number {
  const asked = parseMemoryMib(current.memory);
  const last = runs.at(-1);
  if (last && failedFromMemory(last)) {
    const ran = parseMemoryMib(last.ran.memory);
    if (ran < asked) {
      reasons.push(`Memory ${current.memory}: ${last.appName} failed from memory with ${last.ran.memory} after a reduction, so the next run goes back to what it asks.`);
      return asked;
    }
    reasons.push(`Memory: ${last.appName} failed from memory with ${last.ran.memory}; ${GROWTH}× that.`);
    return Math.floor(ran * GROWTH);
  }
  return withFailureFloors(runs, asked, memoryFromUse(used, current, rules, reasons), reasons);
}

/** Memory from what the completed runs used: more after spill, else their peaks plus the margin, never more than asked. */
function memoryFromUse(used: RunEvidence[], current: ExecutorSize, rules: AdmissionRules, reasons: string[]): number {
  const asked = parseMemoryMib(current.memory);
  const spilled = used.filter((r) => (r.profile?.memorySpilledBytes ?? 0) + (r.profile?.diskSpilledBytes ?? 0) > 0);
  if (spilled.length > 0) {
    reasons.push(`Memory: ${spilled.map((r) => r.appName).join(', ')} spilled to disk; ${GROWTH}× what ${spilled.length === 1 ? 'it' : 'they'} ran with.`);
    return Math.floor(Math.max(...spilled.map((r) => parseMemoryMib(r.ran.memory))) * GROWTH);
  }
  const heap = Math.max(0, ...used.map((r) => r.profile?.peakJvmHeapBytes ?? 0));
  const rss = Math.max(0, ...used.map((r) => r.profile?.peakProcessRssBytes ?? 0));
  if (heap === 0 && rss === 0) {
    // Short runs may end before Spark samples any memory figure: no evidence, no reduction.
    reasons.push(`Memory ${current.memory}: no run recorded a memory figure (runs shorter than Spark's metrics sampling), so as asked.`);
    return asked;
  }
  const fromHeap = (mib(heap) * (1 + SIZING_MARGIN));
  const fromRss = rss > 0 ? memoryForPod(mib(rss) * (1 + SIZING_MARGIN), rules.sizing.memoryOverheadFactor) : 0;
  const need = Math.max(MIN_MEMORY_MIB, roundUp(Math.max(fromHeap, fromRss)));
  reasons.push(`Memory: peak JVM heap ${mib(heap)} MiB${rss > 0 ? `, process RSS ${mib(rss)} MiB` : ''} over ${used.length} run${used.length === 1 ? '' : 's'}, plus ${SIZING_MARGIN * 100}% (at least ${MIN_MEMORY_MIB} MiB): ${formatMemoryMib(Math.min(asked, need))}.`);
  return Math.min(asked, need);
}

/**
 * While a run that failed from memory is remembered, no run gets less than 1.5× the memory it
 * failed with: after a reduction, up to what the job asks; for a job that asks too little (it
 * failed with what it asked, or more), beyond what it asks, so a job that grew to fit stays there.
 */
function withFailureFloors(runs: RunEvidence[], asked: number, memory: number, reasons: string[]): number {
  let floored = memory;
  for (const failed of runs.filter(failedFromMemory)) {
    const ran = parseMemoryMib(failed.ran.memory);
    const floor = Math.min(roundUp(ran * GROWTH), ran < asked ? asked : Infinity);
    if (floor > floored) {
      floored = floor;
      reasons.push(`Memory: at least ${GROWTH}× the ${failed.ran.memory} ${failed.appName} failed from memory with.`);
    }
  }
  return floored;
}

/** Cores, memory and instances from the runs; undefined when no completed run has a profile. */
export function recommend(runs: RunEvidence[], asked: ApplicationConfig, rules: AdmissionRules): Recommendation | undefined {
  const completed = runs.filter((r) => r.state === 'COMPLETED' && r.profile !== null).slice(-EVIDENCE_RUNS);
  // A job none of whose runs completed yet has something to say only when they died from memory: more of it.
  const failures = completed.length === 0 ? runs.filter(failedFromMemory).slice(-EVIDENCE_RUNS) : [];
  const used = completed.length > 0 ? completed : failures;
  if (used.length === 0) return undefined;
  const current = executorSize(asked);
  const reasons: string[] = [];
  let { cores, instances } = current;
  const together = Math.max(1, ...completed.map((r) => r.profile?.peakTasks ?? 0));
  if (completed.length > 0) {
    const perExecutor = Math.max(1, ...used.map((r) => r.profile?.peakTasksPerExecutor ?? 0));
    cores = Math.min(current.cores, perExecutor);
    reasons.push(`Cores: at most ${perExecutor} task${perExecutor === 1 ? '' : 's'} ran at once on one executor: ${cores} of the ${current.cores} asked.`);
    instances = Math.min(current.instances, Math.max(1, Math.ceil(together / cores)));
    if (instances < current.instances) reasons.push(`Instances: at most ${together} tasks ran at once in all: ${instances} executor${instances === 1 ? '' : 's'} of ${cores} core${cores === 1 ? '' : 's'}.`);
  } else {
    reasons.push(`Cores and instances as asked: no run completed yet; ${failures.length} failed from memory.`);
  }
  const ceiling = memoryCeiling(cores, rules);
  const memoryMib = Math.min(ceiling, suggestMemory(runs, completed, current, rules, reasons));
  const suggested: Recommendation['suggested'] = { cores, memory: formatMemoryMib(memoryMib), instances };
  const engineConf = asked.engineConf ?? {};
  if (engineConf['spark.dynamicAllocation.enabled']?.trim().toLowerCase() === 'true') {
    const minExecutors = Number(engineConf['spark.dynamicAllocation.minExecutors'] ?? 0) || 0;
    const idle = Math.max(...used.map((r) => r.profile?.executorIdleMs ?? 0));
    suggested.dynamicAllocation = { minExecutors: Math.min(minExecutors, instances), maxExecutors: instances };
    reasons.push(`Dynamic allocation: at most ${instances} executor${instances === 1 ? '' : 's'} (${together} tasks at once); executors sat idle up to ${Math.round(idle / 1000)} s per run.`);
  }
  return { basedOn: used.map((r) => r.appName), current, suggested, evidence: used.map(figures), saving: saving(used, asked, suggested, rules), reasons };
}

function saving(used: RunEvidence[], asked: ApplicationConfig, suggested: ExecutorSize, rules: AdmissionRules): Recommendation['saving'] {
  const durationMs = used.reduce((sum, r) => sum + r.durationMs, 0) / used.length;
  const factor = rules.sizing.memoryOverheadFactor;
  const before = runCost(asked, durationMs, null, factor);
  const after = runCost({ ...asked, executor: { ...asked.executor, ...suggested } }, durationMs, null, factor);
  const percent = before.requestedCoreHours > 0 ? Math.round((1 - after.requestedCoreHours / before.requestedCoreHours) * 1000) / 10 : 0;
  return {
    requestedCoreHoursPerRun: before.requestedCoreHours, suggestedCoreHoursPerRun: after.requestedCoreHours,
    requestedGibHoursPerRun: before.requestedGibHours, suggestedGibHoursPerRun: after.requestedGibHours, coreHoursPercent: percent,
  };
}
