// Airflow 3's deferral race (apache/airflow#66374, #72716), measured against the provider's fix:
// BENCH_RUNS DAG runs of BENCH_TASKS parallel SparkApplicationOperator tasks whose applications end
// about BENCH_APP_S after submission, under Airflow's own processes (LocalExecutor, SQLite), per mode:
// the trigger firing at once (the provider before the fix), that plus a last read before deferring,
// and the default min_deferral_s (quick_apps.py). The service is local mode with the
// fake-spark-submit TEST DOUBLE as every driver.
//   node --import tsx bench/airflow/quick-apps.ts      (BENCH_TASKS=8 BENCH_RUNS=3 BENCH_APP_S=1)
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../../test/helpers/api.js';
import { exec, lastJson, startBenchService } from './service.js';

interface Row {
  mode: string; tasks: number; failed: number; stateMismatches: number; taskMeanS: number; taskMaxS: number; dagRunMeanS: number;
  deferred: number; exitReportedAfterDeferMaxS: number; exitReportedAfterTriggerStartMaxS: number;
}

const tasks = Number(process.env.BENCH_TASKS ?? 8);
const service = await startBenchService(tasks);
let rows: Row[] = [];
try {
  const home = join(service.dir, 'airflow');
  mkdirSync(home);
  const out = await exec(service.python, [join(repoRoot, 'bench', 'airflow', 'quick_apps.py'), service.base],
    { ...process.env, AIRFLOW_HOME: home, BENCH_TASKS: String(tasks) });
  rows = lastJson<Row[]>(out);
} finally {
  service.stop();
}
const label: Record<string, string> = {
  unheld: 'trigger fires at once (before the fix)', recheck: 'at once + a last read before deferring', held: 'min_deferral_s default (the fix)',
};
console.log(`\n${process.env.BENCH_RUNS ?? 3} DAG runs of ${tasks} parallel tasks whose applications end ~${process.env.BENCH_APP_S ?? 1} s after submission (airflow scheduler + triggerer, LocalExecutor)\n`);
console.log('| mode | tasks | failed by the scheduler | state-mismatch events | deferred | DAG run start → task end, mean (s) | longest (s) | DAG run, mean (s) | deferring exit reported, latest after the deferral (s) | after the trigger started (s) |');
console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
for (const r of rows) {
  console.log(`| ${label[r.mode] ?? r.mode} | ${r.tasks} | ${r.failed} | ${r.stateMismatches} | ${r.deferred} | ${r.taskMeanS} | ${r.taskMaxS} | ${r.dagRunMeanS} | ${r.exitReportedAfterDeferMaxS} | ${r.exitReportedAfterTriggerStartMaxS} |`);
}
