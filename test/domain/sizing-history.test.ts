// Sizing from past runs, the pure part: the recommendation from a job's runs (cores from the
// tasks that ran at once, memory from the peaks plus a margin, more after spill or a memory
// failure, never outside the pools) and admission's use of it under each fromHistory mode,
// recorded in the sizing annotation.
import t from 'tap';
import {
  admitPod, ANNOTATION_SIZING, bareDriverPod, buildRules, effectiveConfig, MIN_MEMORY_MIB, readSizingAnnotation, recommend,
  type RunEvidence, type RunProfile, sizeFromHistory,
} from '../../domain/index.js';
import type { ApplicationConfig } from '../../schemas/index.js';
import { exampleCluster } from '../helpers/api.js';

const rules = buildRules({ nodePools: exampleCluster().nodePools });
const MiB = 2 ** 20;

function asked(overrides: ApplicationConfig): ApplicationConfig {
  const result = effectiveConfig(undefined, overrides, rules, () => undefined);
  if (!result.ok) throw new Error(JSON.stringify(result.body));
  return result.config;
}

const oversized = asked({ executor: { cores: 4, memory: '8g', instances: 2 }, sizing: { fromHistory: 'apply' } });

function profile(figures: Partial<RunProfile> = {}): RunProfile {
  return {
    sparkAppId: 'spark-1', durationMs: 600_000, executors: 2, peakExecutors: 2, peakJvmHeapBytes: 700 * MiB, peakJvmOffHeapBytes: 100 * MiB,
    peakProcessRssBytes: 0, peakTasksPerExecutor: 1, peakTasks: 1, tasks: 10, failedTasks: 0, taskCpuMs: 60_000, taskRunMs: 90_000, gcMs: 500,
    coreHeldMs: 4_800_000, executorIdleMs: 400_000, usedMemoryByteMs: 0, executorHeldMs: 1_200_000, memorySpilledBytes: 0, diskSpilledBytes: 0,
    memoryFailure: false, ...figures,
  };
}

let sequence = 0;
function run(figures: Partial<RunProfile> = {}, extra: Partial<RunEvidence> = {}): RunEvidence {
  sequence += 1;
  const size = { cores: 4, memory: '8g', instances: 2 };
  return {
    appName: `job-${sequence}`, state: 'COMPLETED', endedAt: new Date(Date.UTC(2026, 0, 1, 0, sequence)).toISOString(), durationMs: 600_000,
    asked: size, ran: size, profile: profile(figures), cost: { requestedCoreHours: 1.5, requestedGibHours: 20, usedCoreHours: 0.02, usedGibHours: 0.2 }, ...extra,
  };
}

t.test('an over-sized job: the cores and executors it used, its peak memory plus the margin, the saving', async (t) => {
  const runs = [run({ peakJvmHeapBytes: 500 * MiB }), run({ peakJvmHeapBytes: 700 * MiB })];
  const r = recommend(runs, oversized, rules)!;
  t.same(r.basedOn, runs.map((x) => x.appName), 'the runs it is based on');
  t.same(r.current, { cores: 4, memory: '8g', instances: 2 });
  t.match(r.suggested, { cores: 1, memory: '896m', instances: 1, dynamicAllocation: { maxExecutors: 1 } }, '1 task at a time; 700 MiB × 1.25 rounded up to 128 MiB; dynamic allocation (on by default) up to 1');
  t.equal(r.evidence[1].peakJvmHeapMib, 700, 'the figures per run');
  t.equal(r.evidence[1].cpuUtilization, 0.013, 'CPU used against the cores held');
  t.ok(r.saving.coreHoursPercent >= 50, `saves ${r.saving.coreHoursPercent}% of the requested core-hours`);
  t.ok(r.saving.suggestedGibHoursPerRun < r.saving.requestedGibHoursPerRun);
  t.equal(recommend([run({}, { state: 'FAILED' })], oversized, rules), undefined, 'no completed run: nothing to say');
  const tiny = recommend([run({ peakJvmHeapBytes: 10 * MiB })], oversized, rules)!;
  t.equal(tiny.suggested.memory, `${MIN_MEMORY_MIB}m`, 'never below the floor');
  t.equal(recommend([run({ peakJvmHeapBytes: 0, peakJvmOffHeapBytes: 0 })], oversized, rules)!.suggested.memory, '8192m', 'no memory figure recorded: memory as asked');
  const rss = recommend([run({ peakJvmHeapBytes: 100 * MiB, peakProcessRssBytes: 2000 * MiB })], oversized, rules)!;
  t.ok(Number.parseInt(rss.suggested.memory, 10) * 1.4 >= 2000 * 1.25, `process RSS counts where recorded (${rss.suggested.memory})`);
});

t.test('a busy job keeps its cores; dynamic allocation gets bounds', async (t) => {
  const busy = recommend([run({ peakTasksPerExecutor: 4, peakTasks: 8 })], oversized, rules)!;
  t.same([busy.suggested.cores, busy.suggested.instances], [4, 2], 'every slot was used');
  const dynamic = asked({ executor: { cores: 4, memory: '8g', instances: 6 }, engineConf: { 'spark.dynamicAllocation.enabled': 'true', 'spark.dynamicAllocation.minExecutors': '1' } });
  const bounded = recommend([run({ peakTasksPerExecutor: 2, peakTasks: 6 })], dynamic, rules)!;
  t.same(bounded.suggested, { cores: 2, memory: '896m', instances: 3, dynamicAllocation: { minExecutors: 1, maxExecutors: 3 } });
  t.match(bounded.reasons.join(' '), /idle up to 400 s/, 'the idle time is in the evidence');
});

t.test('spill and memory failures: memory goes up, within the pools', async (t) => {
  const spilled = recommend([run({ memorySpilledBytes: 10 * MiB }, { ran: { cores: 2, memory: '2g', instances: 1 } })], oversized, rules)!;
  t.equal(spilled.suggested.memory, '3072m', 'a run that spilled: 1.5 × what it ran with');
  const reduced = { cores: 1, memory: '896m', instances: 1 };
  const back = recommend([run(), run(), run({ memoryFailure: true }, { state: 'FAILED', ran: reduced })], oversized, rules)!;
  t.equal(back.suggested.memory, '8192m', 'a failure from memory after a reduction: back to what it asks');
  t.match(back.reasons.join(' '), /failed from memory with 896m after a reduction/);
  const after = recommend([run(), run({ memoryFailure: true }, { state: 'FAILED', ran: reduced }), run()], oversized, rules)!;
  t.ok(Number.parseInt(after.suggested.memory, 10) >= 896 * 1.5, `and the next completed run does not bring the reduction back (${after.suggested.memory})`);
  const small = asked({ executor: { cores: 8, memory: '14g', instances: 1 } });
  const died = recommend([run({ peakTasksPerExecutor: 8 }, { state: 'COMPLETED' }), run({}, { state: 'FAILED', stateDetail: 'exit code 137 (OOMKilled)', ran: { cores: 8, memory: '14g', instances: 1 } })], small, rules)!;
  t.equal(died.suggested.memory, '16348m', 'an under-sized run that died: more memory, at most what the largest pool holds');
});

t.test('an under-sized job that only ever failed from memory climbs run by run, within the pools, and stays where it fits', async (t) => {
  const small = asked({ executor: { cores: 2, memory: '1g', instances: 1 }, sizing: { fromHistory: 'apply' } });
  const size = (memory: string) => ({ cores: 2, memory, instances: 1 });
  const oom = (memory: string) => run({ memoryFailure: true }, { state: 'FAILED', asked: size('1g'), ran: size(memory) });
  const history: RunEvidence[] = [oom('1g')];
  const second = sizeFromHistory(small, history, rules);
  t.match(second.decision, { applied: true, basedOn: [history[0].appName] }, 'one failure from memory is enough to grow (never a risk)');
  t.match(second.config.executor, { cores: 2, memory: '1536m', instances: 1 }, '1.5× the memory it failed with; cores and instances as asked');
  history.push(oom('1536m'));
  t.equal(sizeFromHistory(small, history, rules).config.executor?.memory, '2304m', 'failed again: 1.5× again');
  history.push(run({ peakJvmHeapBytes: 300 * MiB }, { asked: size('1g'), ran: size('2304m') }));
  const after = sizeFromHistory(small, history, rules);
  t.equal(after.config.executor?.memory, '2304m', 'completed at 2304m: the next runs stay there, not back to the 1g asked nor to its heap plus the margin');
  t.match(after.decision?.reasons.join(' '), /at least 1\.5× the 1536m/);
  const huge = [oom('12g'), oom('15g')];
  const capped = sizeFromHistory(small, huge, rules);
  t.ok(Number.parseInt(capped.config.executor!.memory!, 10) <= 16348, `never past the largest pool (${capped.config.executor?.memory})`);
  const failedOtherwise = [run({}, { state: 'FAILED', asked: size('1g'), ran: size('1g') })];
  t.equal(sizeFromHistory(small, failedOtherwise, rules).decision?.applied, false, 'a failure for another reason says nothing');
  t.equal(recommend(failedOtherwise, small, rules), undefined);
});

t.test('admission: apply sizes the executor through the pools, recommend and off leave it, the annotation says why', async (t) => {
  const runs = [run(), run()];
  const applied = sizeFromHistory(oversized, runs, rules);
  t.match(applied.config.executor, { cores: 1, memory: '896m', instances: 1, coreRequest: '850m' }, 'the smallest pool\'s share for 1 core');
  t.match(applied.decision, { mode: 'apply', applied: true, asked: { cores: 4, memory: '8g', instances: 2 }, basedOn: runs.map((r) => r.appName) });
  t.equal(sizeFromHistory(oversized, [run()], rules).decision?.applied, false, 'one run is not enough to apply');
  const recommendOnly = asked({ executor: { cores: 4, memory: '8g', instances: 2 } });
  const shown = sizeFromHistory(recommendOnly, runs, rules);
  t.equal(shown.config, recommendOnly, 'recommend (the default) leaves the config as asked');
  t.match(shown.decision, { mode: 'recommend', applied: false });
  t.same(sizeFromHistory(asked({ ...recommendOnly, sizing: { fromHistory: 'off' } }), runs, rules), { config: asked({ ...recommendOnly, sizing: { fromHistory: 'off' } }) }, 'off: nothing');
  t.same(sizeFromHistory(oversized, undefined, rules), { config: oversized }, 'no history: as before');

  const pod = bareDriverPod({ appName: 'job-20260101-000000-abcde', jobName: 'job', namespace: 'x', configOverrides: { executor: { cores: 4, memory: '8g', instances: 2 }, sizing: { fromHistory: 'apply' } } });
  const admission = admitPod(pod, { rules, templates: () => undefined, applications: () => undefined, newAppName: (j) => j, jobRuns: (job) => (job === 'job' ? runs : undefined) });
  if (admission.outcome !== 'admitted') throw new Error(admission.outcome);
  t.equal(admission.config.executor?.cores, 1, 'admission applies it');
  const recorded = readSizingAnnotation(admission.pod.metadata?.annotations?.[ANNOTATION_SIZING]);
  t.equal(recorded?.executor.pool, 'n1-standard-2', 'the executor\'s pool follows its new size');
  t.match(recorded?.history, { mode: 'apply', applied: true, asked: { cores: 4 } }, 'the decision is in the sizing annotation');
  t.match(recorded?.history?.reasons[0], /^Applied: 1 executor of 1 core and 896m \(asked 2 executors of 4 cores and 8g\)/);
});
