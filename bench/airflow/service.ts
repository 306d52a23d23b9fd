// What both Airflow benches start: the SETUP_AIRFLOW=1 virtualenv with this checkout's client and
// provider installed, and `submission-service local` with the fake-spark-submit TEST DOUBLE as
// every driver (a wait's cost does not depend on what Spark does), cores for every task at once.
import { execFile, spawn } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot } from '../../test/helpers/api.js';
import { installCheckout } from '../../test/helpers/checkout-install.js';
import { killDrivers } from '../../test/helpers/drivers.js';
import { writeFakeSparkEnv } from '../../test/helpers/fake-spark-submit.js';
import { sparkEnv } from '../../test/helpers/service.js';
import { tempDir } from '../../test/helpers/temp.js';

export const exec = (command: string, args: string[], env: NodeJS.ProcessEnv = process.env) => new Promise<string>((ok, fail) => {
  execFile(command, args, { env, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => (error ? fail(new Error(`${args.join(' ')}: ${stderr}`)) : ok(stdout)));
});

export interface BenchService { python: string; base: string; dir: string; stop(): void }

export async function startBenchService(tasks: number): Promise<BenchService> {
  const venv = sparkEnv().SUBMISSION_SERVICE_AIRFLOW_ENV;
  if (!venv) throw new Error('SUBMISSION_SERVICE_AIRFLOW_ENV is missing: scripts/setup.sh with SETUP_AIRFLOW=1');
  const python = join(venv, 'bin', 'python');
  const cleanup: Array<() => unknown> = [];
  const dir = tempDir({ teardown: (fn) => cleanup.push(fn) });
  const install = await installCheckout(python, [join(repoRoot, 'clients', 'python'), join(repoRoot, 'clients', 'airflow')]);
  if (install.code !== 0) throw new Error(`pip install of the client and the provider failed:\n${install.output}`);
  // Cores for every task's driver and executor at once: the runs overlap, as N concurrent tasks' do.
  const child = spawn(process.execPath, [join(repoRoot, 'bin', 'submission-service.js'), 'local', '--port', '0', '--data-dir', join(dir, 'data'),
    '--cores', String(Math.max(2, tasks * 2)), '--node-pools', join(repoRoot, 'examples', 'example-cluster.json')], {
    env: { ...process.env, LOG_LEVEL: 'warn', SUBMISSION_SERVICE_PYTHON_ENV: writeFakeSparkEnv(dir) }, stdio: ['ignore', 'pipe', 'inherit'],
  });
  const base = await new Promise<string>((ok) => {
    let out = '';
    child.stdout!.on('data', (c) => { out += c; const m = /at (http:\/\/[^\s/]+)\/api\//.exec(out); if (m) ok(m[1]); });
  });
  return {
    python, base, dir,
    stop: () => {
      child.kill('SIGTERM');
      killDrivers(join(dir, 'data'));
      for (const fn of cleanup) fn();
    },
  };
}

/** The last line of a bench script's output, its JSON row. */
export const lastJson = <T>(out: string): T => JSON.parse(out.trim().split('\n').at(-1)!) as T;
