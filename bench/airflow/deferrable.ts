// The Airflow provider's wait, costed: N concurrent tasks whose Spark runs last BENCH_HOLD_S
// seconds, waited for by (1) the provider's trigger, N waits on one asyncio loop as Airflow's
// triggerer runs them, no worker slot; (2) a worker slot per task polling GET every BENCH_POLL_S
// (the polling operators' way); (3) a worker slot per task on the events stream
// (deferrable=False). `submission-service local` with the fake-spark-submit TEST DOUBLE as the
// driver (the wait's cost does not depend on what Spark does), cost.py in the SETUP_AIRFLOW=1
// virtualenv (SUBMISSION_SERVICE_AIRFLOW_ENV), the checkout's client and provider installed in it.
//   node --import tsx bench/airflow/deferrable.ts      (BENCH_TASKS=20 BENCH_HOLD_S=20 BENCH_POLL_S=10)
import { execFile, spawn } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot } from '../../test/helpers/api.js';
import { killDrivers } from '../../test/helpers/drivers.js';
import { writeFakeSparkEnv } from '../../test/helpers/fake-spark-submit.js';
import { sparkEnv } from '../../test/helpers/service.js';
import { tempDir } from '../../test/helpers/temp.js';

const MODES = ['trigger', 'poll', 'worker-events'] as const;
const tasks = Number(process.env.BENCH_TASKS ?? 20);
const venv = sparkEnv().SUBMISSION_SERVICE_AIRFLOW_ENV;
if (!venv) throw new Error('SUBMISSION_SERVICE_AIRFLOW_ENV is missing: scripts/setup.sh with SETUP_AIRFLOW=1');
const python = join(venv, 'bin', 'python');
const cleanup: Array<() => unknown> = [];
const dir = tempDir({ teardown: (fn) => cleanup.push(fn) });

const exec = (command: string, args: string[], env: NodeJS.ProcessEnv = process.env) => new Promise<string>((ok, fail) => {
  execFile(command, args, { env, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => (error ? fail(new Error(`${args.join(' ')}: ${stderr}`)) : ok(stdout)));
});
await exec(python, ['-m', 'pip', 'install', '-q', '--disable-pip-version-check', '--no-deps', '--no-build-isolation', '--force-reinstall',
  join(repoRoot, 'clients', 'python'), join(repoRoot, 'clients', 'airflow')]);

// Cores for every task's driver and executor at once: the runs overlap, as N concurrent tasks' do.
const child = spawn(process.execPath, [join(repoRoot, 'bin', 'submission-service.js'), 'local', '--port', '0', '--data-dir', join(dir, 'data'),
  '--cores', String(Math.max(2, tasks * 2)), '--node-pools', join(repoRoot, 'examples', 'example-cluster.json')], {
  env: { ...process.env, LOG_LEVEL: 'warn', SUBMISSION_SERVICE_PYTHON_ENV: writeFakeSparkEnv(dir) }, stdio: ['ignore', 'pipe', 'inherit'],
});
const base = await new Promise<string>((ok) => {
  let out = '';
  child.stdout!.on('data', (c) => { out += c; const m = /at (http:\/\/[^\s/]+)\/api\//.exec(out); if (m) ok(m[1]); });
});

interface Row { mode: string; tasks: number; workerSlots: number; threads: number; waitS: number; cpuS: number; requests: number | null; peakRssMiB: number }
const rows: Row[] = [];
try {
  for (const mode of MODES) {
    const out = await exec(python, [join(repoRoot, 'bench', 'airflow', 'cost.py'), base, mode], { ...process.env, AIRFLOW_HOME: join(dir, 'airflow') });
    rows.push(JSON.parse(out.trim().split('\n').at(-1)!) as Row);
  }
} finally {
  child.kill('SIGTERM');
  killDrivers(join(dir, 'data'));
  for (const fn of cleanup) fn();
}
console.log(`\n${tasks} concurrent tasks, Spark runs of ${process.env.BENCH_HOLD_S ?? 20} s, polling every ${process.env.BENCH_POLL_S ?? 10} s\n`);
console.log('| wait | worker slots held while Spark runs | threads | wait (s) | CPU of the waiting process (s) | CPU per task (ms) | GETs while waiting | peak RSS (MiB) |');
console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
for (const r of rows) {
  console.log(`| ${r.mode} | ${r.workerSlots} | ${r.threads} | ${r.waitS} | ${r.cpuS} | ${Math.round((r.cpuS / r.tasks) * 1000)} | ${r.requests ?? '-'} | ${r.peakRssMiB} |`);
}
