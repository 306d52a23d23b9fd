// The Airflow provider under Airflow's own processes (api-server, scheduler, dag-processor,
// triggerer; LocalExecutor, SQLite): one DAG run of BENCH_TASKS parallel SparkApplicationOperator
// tasks whose Spark runs last BENCH_HOLD_S seconds, deferrable (the default) against
// deferrable=False, one mode after the other under one set of Airflow's processes (scheduled.py).
// The service is local mode with the fake-spark-submit TEST DOUBLE as every driver.
//   node --import tsx bench/airflow/scheduled.ts      (BENCH_TASKS=10 BENCH_HOLD_S=30)
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../../test/helpers/api.js';
import { exec, lastJson, startBenchService } from './service.js';

const MODES = ['deferrable', 'worker'] as const;
const tasks = Number(process.env.BENCH_TASKS ?? 10);
const service = await startBenchService(tasks);

interface Row {
  mode: string; tasks: number; holdS: number; workerSlotS: number; deferredS: number; mostRunning: number;
  firstRunningS: number; allRunningS: number; runS: number; triggererCpuS: number; schedulerCpuS: number;
}
let rows: Row[] = [];
try {
  const home = join(service.dir, 'airflow');
  mkdirSync(home);
  const out = await exec(service.python, [join(repoRoot, 'bench', 'airflow', 'scheduled.py'), service.base, ...MODES], { ...process.env, AIRFLOW_HOME: home });
  rows = lastJson<Row[]>(out);
} finally {
  service.stop();
}
console.log(`\n${tasks} parallel tasks in one DAG run under airflow scheduler + triggerer (LocalExecutor), Spark runs of ${rows[0]?.holdS} s\n`);
console.log('| operator | worker-slot-seconds | deferred task-seconds | most tasks in a slot at once | trigger → first app RUNNING (s) | → all RUNNING (s) | → DAG run success (s) | triggerer CPU (s) | scheduler + workers CPU (s) |');
console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- |');
for (const r of rows) {
  console.log(`| ${r.mode === 'deferrable' ? 'deferrable (default)' : 'deferrable=False'} | ${r.workerSlotS} | ${r.deferredS} | ${r.mostRunning} | ${r.firstRunningS} | ${r.allRunningS} | ${r.runS} | ${r.triggererCpuS} | ${r.schedulerCpuS} |`);
}
