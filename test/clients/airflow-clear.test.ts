// The Airflow provider's "stop the application when the task is cleared" under Airflow's own
// long-running processes (clients/airflow/tests/test_clear.py): api-server, scheduler,
// dag-processor and triggerer (LocalExecutor, SQLite), a deferred SparkApplicationOperator task
// cleared through the REST API as the UI's Clear button does. The triggerer calls the trigger's
// on_kill: the application ends KILLED (it would run until released otherwise); the re-run does
// not adopt it but submits its own, which ends COMPLETED. Real Airflow 3 (SETUP_AIRFLOW=1's
// virtualenv), real Spark, the live service in local mode. A file of its own: with
// airflow-scheduler.test.ts's two kills it passed tap's 1200 s per file at load ~30.
import t from 'tap';
import { runAirflowSuite } from '../helpers/pytest.js';

t.test('a deferred task cleared by its user stops its application, and the re-run makes a new one', async (t) => {
  await runAirflowSuite(t, ['tests/test_clear.py'], 1);
});
