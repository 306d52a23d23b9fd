// The admission function alone, in a tight loop on one thread: admitPod on a bare driver
// pod (template label + overrides annotation), and its parts: merge only (template with
// overrides), sizing only (sizeApplication on the defaulted config), the effective config
// (merge + defaults + sizing) and the pod rendering. Warm-up first, then a few timed rounds;
// the median round is reported.
//
//   node --import tsx bench/admission.ts          (run.sh pins it to one core with taskset)
//   env: ADMISSION_ROUNDS (5), ADMISSION_ROUND_MS (1000), ADMISSION_WARMUP_MS (1500)
import { readNodePools } from '../cli/config.js';
import { newAppName } from '../cluster/app-name.js';
import type { ApplicationConfig } from '../schemas/index.js';
import {
  admitPod, applyDefaults, bareDriverPod, buildRules, deepMerge, effectiveConfig, renderDriverPod, sizeApplication,
  sparkProperties, type AdmissionContext,
} from '../domain/index.js';
import { clone } from '../domain/merge.js';
import { OVERRIDES, SUBMISSION, TEMPLATE } from './fixtures.js';
import { envNumber, fmt, load, median, NODE_POOLS, saveSummary, table } from './lib.js';

const ROUNDS = envNumber('ADMISSION_ROUNDS', 5);
const ROUND_MS = envNumber('ADMISSION_ROUND_MS', 1000);
const WARMUP_MS = envNumber('ADMISSION_WARMUP_MS', 1500);
const GOAL = 20_000;

const file = readNodePools(NODE_POOLS);
const rules = buildRules({ nodePools: file.nodePools, sizing: file.sizing, namespace: 'local' });
const templates = new Map([[TEMPLATE.name, TEMPLATE.config]]);
const ctx: AdmissionContext = {
  rules,
  templates: (name) => templates.get(name),
  applications: () => undefined,
  newAppName,
};
const appName = newAppName(SUBMISSION.jobName);
const pod = bareDriverPod({ appName, jobName: SUBMISSION.jobName, namespace: '', configTemplateName: TEMPLATE.name, configOverrides: OVERRIDES });
const merged = deepMerge<ApplicationConfig>(TEMPLATE.config, OVERRIDES);
const defaulted = applyDefaults(merged, rules);
const effective = effectiveConfig(TEMPLATE.name, OVERRIDES, rules, ctx.templates);
if (!effective.ok) throw new Error(`the fixture does not admit: ${JSON.stringify(effective)}`);
const identity = { appName, jobName: SUBMISSION.jobName, namespace: 'local' };

// Sanity: the loop must measure a real admission, not a refusal.
const sample = admitPod(pod, ctx);
if (sample.outcome !== 'admitted' || sample.config.executor?.coreRequest !== '3400m') {
  throw new Error(`unexpected admission: ${JSON.stringify(sample).slice(0, 500)}`);
}

let sink = 0; // keeps results alive so that the work is not optimised away
const cases: { name: string; note: string; run: () => unknown; goal?: number }[] = [
  { name: 'admitPod', note: 'bare pod → admitted pod (parse overrides, merge, defaults, sizing, render)', run: () => { const a = admitPod(pod, ctx); return a.outcome === 'admitted' ? a.pod : a; }, goal: GOAL },  // reading .pod renders it, as the webhook does
  { name: 'effectiveConfig', note: 'merge + defaults + sizing', run: () => effectiveConfig(TEMPLATE.name, OVERRIDES, rules, ctx.templates) },
  { name: 'merge only', note: 'deepMerge(template, overrides)', run: () => deepMerge(TEMPLATE.config, OVERRIDES) },
  { name: 'sizing only', note: 'sizeApplication(defaulted config)', run: () => sizeApplication(defaulted, rules) },
  { name: 'render only', note: 'renderDriverPod(clone(pod), effective config)', run: () => renderDriverPod(clone(pod), effective.config, identity, rules) },
  { name: 'sparkProperties only', note: 'the Spark properties render writes into the container args', run: () => sparkProperties(effective.config, identity, rules) },
];

/**
 * Calls fn for about ms milliseconds of wall time. Returns calls per CPU-second of this
 * process (all its threads, GC included: robust when other work shares the machine) and
 * calls per wall-second (what one uncontended core would see only on an idle machine).
 */
function timed(fn: () => unknown, ms: number): { cpu: number; wall: number } {
  const batch = 64;
  let calls = 0;
  const cpuStart = process.cpuUsage();
  const start = process.hrtime.bigint();
  const budget = BigInt(Math.round(ms * 1e6));
  let elapsed = 0n;
  do {
    for (let i = 0; i < batch; i++) if (fn() !== undefined) sink++;
    calls += batch;
    elapsed = process.hrtime.bigint() - start;
  } while (elapsed < budget);
  const cpu = process.cpuUsage(cpuStart);
  return { cpu: calls / ((cpu.user + cpu.system) / 1e6), wall: calls / (Number(elapsed) / 1e9) };
}

const results = cases.map((c) => {
  timed(c.run, WARMUP_MS);
  const samples: { cpu: number; wall: number }[] = [];
  for (let i = 0; i < ROUNDS; i++) samples.push(timed(c.run, ROUND_MS));
  const rounds = samples.map((s) => s.cpu);
  process.stderr.write(`admission: ${c.name}: ${rounds.map((r) => fmt(r)).join(', ')} /CPU-s; wall ${samples.map((s) => fmt(s.wall)).join(', ')} /s (load ${load()})\n`);
  return { ...c, rounds, median: median(rounds), wall: median(samples.map((s) => s.wall)) };
});
if (sink === 0) throw new Error('nothing ran');

const admit = results[0];
process.stdout.write([
  `## Admission alone (one thread, ${ROUNDS} rounds of ${ROUND_MS} ms after ${WARMUP_MS} ms warm-up; median)`,
  '',
  table(['case', 'what', 'median ops per CPU-s', 'µs CPU/op', 'min … max', 'median ops per wall-s'],
    results.map((r) => [r.name, r.note, fmt(r.median), fmt(1e6 / r.median, 1), `${fmt(Math.min(...r.rounds))} … ${fmt(Math.max(...r.rounds))}`, fmt(r.wall)])),
  '',
  `Load average during the run: ${load()} (2 cores). Ops per CPU-second is the figure to compare with the goal; wall-clock rates drop when other processes share the core.`,
  '',
  `admitPod: **${fmt(admit.median)} pods per CPU-second** (wall ${fmt(admit.wall)}/s; goal ≥ ${fmt(GOAL)}/s)`,
  '',
].join('\n') + '\n');

const find = (name: string) => results.find((r) => r.name === name)!;
saveSummary('admission', [
  { bench: 'admission', metric: 'admitPod pods/s (per CPU-second, one thread)', value: `${fmt(admit.median)} (wall ${fmt(admit.wall)})`, goal: `≥ ${fmt(GOAL)}/s`, verdict: admit.median >= GOAL ? 'ok' : 'below goal' },
  { bench: 'admission', metric: 'merge only ops/s', value: fmt(find('merge only').median), goal: '', verdict: 'info' },
  { bench: 'admission', metric: 'sizing only ops/s', value: fmt(find('sizing only').median), goal: '', verdict: 'info' },
], results.map(({ name, rounds, median: m, wall }) => ({ name, rounds, median: m, wall })));
