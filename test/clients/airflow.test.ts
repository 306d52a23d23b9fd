// The Airflow provider (clients/airflow) with real Airflow 3 (scripts/setup.sh's SETUP_AIRFLOW=1
// virtualenv, pinned in clients/airflow/requirements-test.txt) against the live service in local
// mode: its pytest suite, each pytest test reported here as a subtest. The suite runs
// `airflow dags test` of examples/airflow/spark_pi.py (pi.py to success, the driver log in the task
// log, the Spark UI link in XCom; a failing run fails the task with its stateDetail), a retried
// task that adopts the first try's application, the trigger and on_kill, and 50 parallel
// submissions with one idempotency key.
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { repoRoot } from '../helpers/api.js';
import { junitCases, run } from '../helpers/pytest.js';
import { sparkEnv, startService } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';

const providerDir = join(repoRoot, 'clients', 'airflow');

t.test('the Airflow provider\'s pytest suite passes with real Airflow against the live service', async (t) => {
  const venv = sparkEnv().SUBMISSION_SERVICE_AIRFLOW_ENV;
  if (!venv || !existsSync(join(venv, 'bin', 'airflow'))) {
    t.fail('SUBMISSION_SERVICE_AIRFLOW_ENV names no Airflow virtualenv: run scripts/setup.sh with SETUP_AIRFLOW=1 (scripts/test.sh does)');
    return;
  }
  const python = join(venv, 'bin', 'python');
  // The client and the provider as they are in this checkout, installed the way the README says
  // (without a build directory left from an earlier run, which setuptools would reuse).
  for (const dir of ['python', 'airflow']) rmSync(join(repoRoot, 'clients', dir, 'build'), { recursive: true, force: true });
  const install = await run(python, ['-m', 'pip', 'install', '--disable-pip-version-check', '-q', '--no-deps', '--no-build-isolation',
    '--force-reinstall', join(repoRoot, 'clients', 'python'), providerDir]);
  t.equal(install.code, 0, `pip install ./clients/python ./clients/airflow\n${install.output}`);
  const dataDir = tempDir(t);
  const service = await startService(t, { dataDir: join(dataDir, 'data'), args: ['--cores', '2'] });
  const report = join(dataDir, 'pytest.xml');
  const pytest = await run(python, ['-m', 'pytest', '-q', '-p', 'no:cacheprovider', `--basetemp=${join(dataDir, 'pytest')}`, `--junitxml=${report}`, 'tests'], {
    cwd: providerDir,
    env: { ...sparkEnv(), SUBMISSION_SERVICE_URL: service.url },
  });
  const cases = existsSync(report) ? junitCases(readFileSync(report, 'utf8')) : [];
  t.ok(cases.length >= 10, `pytest ran the suite (${cases.length} tests)\n${pytest.output.slice(-4000)}`);
  for (const c of cases) {
    await t.test(c.name, async (t) => {
      t.equal(c.skipped, undefined, 'not skipped');
      t.equal(c.failure, undefined, c.failure ?? 'passed');
    });
  }
  t.equal(pytest.code, 0, `pytest exit code\n${pytest.output.slice(-4000)}`);
});
