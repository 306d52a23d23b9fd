// The Airflow provider's wait, costed: N concurrent tasks whose Spark runs last BENCH_HOLD_S
// seconds, waited for by (1) the provider's trigger, N waits on one asyncio loop as Airflow's
// triggerer runs them, no worker slot; (2) a worker slot per task polling GET every BENCH_POLL_S
// (the polling operators' way); (3) a worker slot per task on the events stream
// (deferrable=False). `submission-service local` with the fake-spark-submit TEST DOUBLE as the
// driver (the wait's cost does not depend on what Spark does), cost.py in the SETUP_AIRFLOW=1
// virtualenv (SUBMISSION_SERVICE_AIRFLOW_ENV), the checkout's client and provider installed in it.
//   node --import tsx bench/airflow/deferrable.ts      (BENCH_TASKS=20 BENCH_HOLD_S=20 BENCH_POLL_S=10)
import { join } from 'node:path';
import { repoRoot } from '../../test/helpers/api.js';
import { exec, lastJson, startBenchService } from './service.js';

const MODES = ['trigger', 'poll', 'worker-events'] as const;
const tasks = Number(process.env.BENCH_TASKS ?? 20);
const service = await startBenchService(tasks);

interface Row { mode: string; tasks: number; workerSlots: number; threads: number; waitS: number; cpuS: number; requests: number | null; peakRssMiB: number }
const rows: Row[] = [];
try {
  for (const mode of MODES) {
    const out = await exec(service.python, [join(repoRoot, 'bench', 'airflow', 'cost.py'), service.base, mode], { ...process.env, AIRFLOW_HOME: join(service.dir, 'airflow') });
    rows.push(lastJson<Row>(out));
  }
} finally {
  service.stop();
}
console.log(`\n${tasks} concurrent tasks, Spark runs of ${process.env.BENCH_HOLD_S ?? 20} s, polling every ${process.env.BENCH_POLL_S ?? 10} s\n`);
console.log('| wait | worker slots held while Spark runs | threads | wait (s) | CPU of the waiting process (s) | CPU per task (ms) | GETs while waiting | peak RSS (MiB) |');
console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
for (const r of rows) {
  console.log(`| ${r.mode} | ${r.workerSlots} | ${r.threads} | ${r.waitS} | ${r.cpuS} | ${Math.round((r.cpuS / r.tasks) * 1000)} | ${r.requests ?? '-'} | ${r.peakRssMiB} |`);
}
