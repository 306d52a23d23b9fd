// The Airflow provider (clients/airflow) with real Airflow 3 (scripts/setup.sh's SETUP_AIRFLOW=1
// virtualenv, pinned in clients/airflow/requirements-test.txt) against the live service in local
// mode: its pytest suite, each pytest test reported here as a subtest. The suite runs
// `airflow dags test` of examples/airflow/spark_pi.py (pi.py to success, the driver log in the task
// log, the Spark UI link in XCom; a failing run fails the task with its stateDetail), a retried
// task that adopts the first try's application, the rule that tells a crash from a clear (adopt
// or stop), the trigger and on_kill, 50 parallel submissions with one idempotency key (these last
// in process against a second service whose drivers are the fake-spark-submit TEST DOUBLE:
// tests/test_live.py says where real Spark covers them). The runs under a real scheduler and
// triggerer are airflow-scheduler.test.ts's.
import t from 'tap';
import { runAirflowSuite } from '../helpers/pytest.js';

t.test('the Airflow provider\'s pytest suite passes with real Airflow against the live service', async (t) => {
  await runAirflowSuite(t, ['tests', '--ignore=tests/test_scheduler.py', '--ignore=tests/test_clear.py', '--ignore=tests/test_quick_apps.py'], 10);
});
