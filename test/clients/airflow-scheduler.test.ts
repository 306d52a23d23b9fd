// The Airflow provider under Airflow's own long-running processes (clients/airflow/tests/
// test_scheduler.py, test_clear.py): api-server, scheduler, dag-processor and triggerer as
// `airflow standalone` runs them (LocalExecutor, SQLite). A DAG run whose worker is SIGKILLed while
// its Spark application runs (the task process alone; then its supervisor with it, found by the
// missing heartbeats): Airflow's retry re-attaches to that same application (one application for
// the run, checked through the service's API), defers to the triggerer, and the task ends success
// with the driver log in its log. A deferred task cleared by its user: the trigger's on_kill stops
// the application, and the re-run, which tells the clear from a crash by its context (the run's
// clear_number, the task's max_tries), does not adopt it but submits its own. Real Airflow 3
// (SETUP_AIRFLOW=1's virtualenv), real Spark, the live service in local mode.
import t from 'tap';
import { runAirflowSuite } from '../helpers/pytest.js';

// Three DAG runs under a real scheduler, each holding Spark until the test releases it: 9 minutes
// beside a loaded machine's other suites (2026-11-29), so the file's default 20 would leave little room.
t.setTimeout(45 * 60_000);

t.test('a worker killed while Spark runs is retried and re-attaches to the same application; a cleared deferred task stops it and runs anew', async (t) => {
  await runAirflowSuite(t, ['tests/test_scheduler.py', 'tests/test_clear.py'], 3);
});
