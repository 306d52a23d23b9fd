// The Airflow provider under Airflow's own long-running processes: api-server, scheduler,
// dag-processor and triggerer as `airflow standalone` runs them (LocalExecutor, SQLite), one set
// for the three pytest files, which the session shares (a start is ~30 CPU s: four processes
// importing Airflow, the api-server booting). Real Airflow 3 (SETUP_AIRFLOW=1's virtualenv).
// - clients/airflow/tests/test_quick_apps.py: Airflow 3's deferral race (apache/airflow#66374,
//   #72716): 8 parallel SparkApplicationOperator tasks whose applications end about a second after
//   submission. Before the trigger's min_deferral_s some were failed by the scheduler though their
//   applications COMPLETED (bench/airflow/quick-apps.ts counts them); now every one succeeds on its
//   first try. Their service is a second one in local mode with the fake-spark-submit TEST DOUBLE as
//   every driver (quick runs, all at once; runAirflowSuite starts it).
// - clients/airflow/tests/test_scheduler.py: a DAG run whose worker is SIGKILLed while its Spark
//   application runs (the task process alone; then its supervisor with it, found by the missing
//   heartbeats), Airflow's retry re-attaching to that same application (one application for the
//   run, checked through the service's API) and deferring to the triggerer, and the task ending
//   success with the driver log in its log. Real Spark, the live service in local mode.
// - clients/airflow/tests/test_clear.py: a deferred task cleared by its user: the trigger's on_kill
//   stops the application, and the re-run, which tells the clear from a crash by its context (the
//   run's clear_number, the task's max_tries), does not adopt it but submits its own.
import t from 'tap';
import { runAirflowSuite } from '../helpers/pytest.js';

// Four DAG runs under a real scheduler, three holding Spark until the test releases them, beside
// the quick apps: 9 minutes for the two Spark files beside a loaded machine's other suites
// (2026-11-29); the runner's per-file guard (.taprc, 1,200 s) would leave little room.
t.setTimeout(45 * 60_000);

t.test('tasks whose applications end at once all succeed; a worker killed while Spark runs is retried and re-attaches to the same application; a cleared deferred task stops it and runs anew', async (t) => {
  // The quick runs first, on a fresh set, as they ran alone before; then the kills, then the clear.
  await runAirflowSuite(t, ['tests/test_quick_apps.py', 'tests/test_scheduler.py', 'tests/test_clear.py'], 4);
});
