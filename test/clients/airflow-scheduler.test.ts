// The Airflow provider under Airflow's own long-running processes (clients/airflow/tests/
// test_scheduler.py): api-server, scheduler, dag-processor and triggerer as `airflow standalone`
// runs them (LocalExecutor, SQLite), a DAG run whose task process is SIGKILLed while its Spark
// application runs, Airflow's retry re-attaching to that same application (one application for
// the run, checked through the service's API) and deferring to the triggerer, and the task ending
// success with the driver log in its log. Real Airflow 3 (SETUP_AIRFLOW=1's virtualenv), real
// Spark, the live service in local mode.
import t from 'tap';
import { runAirflowSuite } from '../helpers/pytest.js';

t.test('a task process killed while Spark runs is retried by the scheduler and re-attaches to the same application', async (t) => {
  await runAirflowSuite(t, ['tests/test_scheduler.py'], 1);
});
