// The Airflow provider under Airflow's own long-running processes (clients/airflow/tests/
// test_scheduler.py): api-server, scheduler, dag-processor and triggerer as `airflow standalone`
// runs them (LocalExecutor, SQLite), a DAG run whose worker is SIGKILLed while its Spark
// application runs (the task process alone; then its supervisor with it, found by the missing
// heartbeats), Airflow's retry re-attaching to that same application (one application for the
// run, checked through the service's API) and deferring to the triggerer, and the task ending
// success with the driver log in its log. Real Airflow 3 (SETUP_AIRFLOW=1's virtualenv), real
// Spark, the live service in local mode. (tests/test_clear.py, a cleared deferred task, is
// skipped: README, "Known gap, a cleared deferred task".)
import t from 'tap';
import { runAirflowSuite } from '../helpers/pytest.js';

t.test('a worker killed while Spark runs (its task process; the whole worker) is retried by the scheduler and re-attaches to the same application', async (t) => {
  await runAirflowSuite(t, ['tests/test_scheduler.py'], 2);
});
