// A pytest suite run from tap: a command's exit code and output, the test cases of the JUnit XML
// report pytest writes (--junitxml), so each pytest test is reported as a subtest, and the whole
// start-up of a client suite against the live service.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Test } from 'tap';
import { repoRoot } from './api.js';
import { installCheckout } from './checkout-install.js';
import { run } from './command.js';
import { writeFakeSparkEnv } from './fake-spark-submit.js';
import { sparkEnv, startService } from './service.js';
import { tempDir } from './temp.js';

export { run } from './command.js';

export interface PytestCase { name: string; failure?: string; skipped?: string }

/** The test cases of a JUnit XML report (pytest --junitxml). */
export function junitCases(xml: string): PytestCase[] {
  const cases: PytestCase[] = [];
  const unescape = (s: string) => s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&amp;/g, '&');
  for (const m of xml.matchAll(/<testcase\b([^>]*?)(\/>|>([\s\S]*?)<\/testcase>)/g)) {
    const name = unescape(/\bname="([^"]*)"/.exec(m[1])?.[1] ?? '?');
    const body = m[3] ?? '';
    const failure = /<(failure|error)\b[^>]*?(?:message="([^"]*)")?[^>]*>([\s\S]*?)<\/\1>/.exec(body) ?? /<(failure|error)\b[^>]*?message="([^"]*)"[^>]*\/>/.exec(body);
    const skipped = /<skipped\b[^>]*?message="([^"]*)"/.exec(body);
    cases.push({ name, ...(failure ? { failure: unescape(`${failure[2] ?? ''}\n${failure[3] ?? ''}`) } : {}), ...(skipped ? { skipped: unescape(skipped[1]) } : {}) });
  }
  return cases;
}

export interface LiveSuite {
  /** The virtualenv's python. */
  python: string;
  /** The suite's package directory (pytest runs its tests/ from there). */
  dir: string;
  /** This checkout's packages to install into the virtualenv first (the way the READMEs say). */
  install: string[];
  /** Fewer cases than this means the suite did not really run. */
  minimumCases: number;
  env?: NodeJS.ProcessEnv;
  /** What pytest runs (default: the whole tests/ folder). */
  tests?: string[];
}

/**
 * A client suite against the live service in local mode: installs this checkout's packages,
 * starts the service, runs pytest with SUBMISSION_SERVICE_URL set and reports each pytest test as a
 * subtest (the Python client's and the Airflow provider's suites share this start-up).
 */
export async function runLiveSuite(t: Test, suite: LiveSuite): Promise<void> {
  const install = await installCheckout(suite.python, suite.install);
  t.equal(install.code, 0, `pip install ${suite.install.join(' ')}\n${install.output}`);
  const dataDir = tempDir(t);
  const service = await startService(t, { dataDir: join(dataDir, 'data'), args: ['--cores', '2'] });
  const report = join(dataDir, 'pytest.xml');
  const pytest = await run(suite.python, ['-m', 'pytest', '-q', '-p', 'no:cacheprovider', `--basetemp=${join(dataDir, 'pytest')}`, `--junitxml=${report}`, ...(suite.tests ?? ['tests'])], {
    cwd: suite.dir,
    env: { ...(suite.env ?? process.env), SUBMISSION_SERVICE_URL: service.url, SUBMISSION_SERVICE_EXAMPLES: join(repoRoot, 'examples') },
  });
  const cases = existsSync(report) ? junitCases(readFileSync(report, 'utf8')) : [];
  t.ok(cases.length >= suite.minimumCases, `pytest ran the suite (${cases.length} tests)\n${pytest.output.slice(-4000)}`);
  for (const c of cases) {
    await t.test(c.name, async (t) => {
      t.equal(c.skipped, undefined, 'not skipped');
      t.equal(c.failure, undefined, c.failure ?? 'passed');
    });
  }
  t.equal(pytest.code, 0, `pytest exit code\n${pytest.output.slice(-4000)}`);
}

/**
 * The Airflow provider's suite (or part of it) in scripts/setup.sh's SETUP_AIRFLOW=1 virtualenv,
 * with a second service beside the live one whose drivers are all the fake-spark-submit TEST
 * DOUBLE (SUBMISSION_SERVICE_FAKE_SPARK_URL: conftest.py's fake_url and connection
 * submission_service_fake), for the tests that check no Spark work: quick runs, all at once.
 */
export async function runAirflowSuite(t: Test, tests: string[], minimumCases: number): Promise<void> {
  const venv = sparkEnv().SUBMISSION_SERVICE_AIRFLOW_ENV;
  if (!venv || !existsSync(join(venv, 'bin', 'airflow'))) {
    t.fail('SUBMISSION_SERVICE_AIRFLOW_ENV names no Airflow virtualenv: run scripts/setup.sh with SETUP_AIRFLOW=1 (scripts/test.sh does)');
    return;
  }
  const providerDir = join(repoRoot, 'clients', 'airflow');
  const dir = tempDir(t);
  const fake = await startService(t, {
    dataDir: join(dir, 'data'), args: ['--cores', '32'], env: { ...sparkEnv(), SUBMISSION_SERVICE_PYTHON_ENV: writeFakeSparkEnv(dir) },
  });
  await runLiveSuite(t, {
    python: join(venv, 'bin', 'python'), dir: providerDir, install: [join(repoRoot, 'clients', 'python'), providerDir],
    minimumCases, env: { ...sparkEnv(), SUBMISSION_SERVICE_FAKE_SPARK_URL: fake.url }, tests,
  });
}
