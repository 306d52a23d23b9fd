// Airflow 3's deferral race (apache/airflow#66374, #72716) under Airflow's own scheduler and
// triggerer (LocalExecutor, SQLite; clients/airflow/tests/test_quick_apps.py): 8 parallel
// SparkApplicationOperator tasks whose applications end about a second after submission. Before
// the trigger's min_deferral_s some were failed by the scheduler though their applications
// COMPLETED (bench/airflow/quick-apps.ts counts them); now every one succeeds on its first try.
// The service is local mode with the fake-spark-submit TEST DOUBLE as every driver (quick runs,
// all at once); real Airflow 3 from SETUP_AIRFLOW=1's virtualenv.
import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../helpers/api.js';
import { installCheckout } from '../helpers/checkout-install.js';
import { writeFakeSparkEnv } from '../helpers/fake-spark-submit.js';
import { junitCases, run } from '../helpers/pytest.js';
import { sparkEnv, startService } from '../helpers/service.js';
import { tempDir } from '../helpers/temp.js';

t.test('tasks whose Spark applications end at once all succeed under the scheduler and triggerer', async (t) => {
  const venv = sparkEnv().SUBMISSION_SERVICE_AIRFLOW_ENV;
  if (!venv || !existsSync(join(venv, 'bin', 'airflow'))) {
    t.fail('SUBMISSION_SERVICE_AIRFLOW_ENV names no Airflow virtualenv: run scripts/setup.sh with SETUP_AIRFLOW=1 (scripts/test.sh does)');
    return;
  }
  const python = join(venv, 'bin', 'python');
  const providerDir = join(repoRoot, 'clients', 'airflow');
  const install = await installCheckout(python, [join(repoRoot, 'clients', 'python'), providerDir]);
  t.equal(install.code, 0, `pip install the client and the provider\n${install.output}`);
  const dir = tempDir(t);
  const service = await startService(t, {
    dataDir: join(dir, 'data'), args: ['--cores', '32'], env: { ...sparkEnv(), SUBMISSION_SERVICE_PYTHON_ENV: writeFakeSparkEnv(dir) },
  });
  const report = join(dir, 'pytest.xml');
  const pytest = await run(python, ['-m', 'pytest', '-q', '-p', 'no:cacheprovider', `--basetemp=${join(dir, 'pytest')}`, `--junitxml=${report}`,
    'tests/test_quick_apps.py'], { cwd: providerDir, env: { ...sparkEnv(), SUBMISSION_SERVICE_URL: service.url, SUBMISSION_SERVICE_FAKE_SPARK: '1' } });
  const cases = existsSync(report) ? junitCases(readFileSync(report, 'utf8')) : [];
  t.equal(cases.length, 1, `pytest ran the test\n${pytest.output.slice(-4000)}`);
  for (const c of cases) t.equal(c.failure, undefined, c.failure ?? c.name);
  t.equal(pytest.code, 0, `pytest exit code\n${pytest.output.slice(-4000)}`);
});
