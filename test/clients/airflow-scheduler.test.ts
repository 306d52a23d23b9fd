// The Airflow provider under Airflow's own long-running processes (clients/airflow/tests/
// test_scheduler.py): api-server, scheduler, dag-processor and triggerer as `airflow standalone`
// runs them (LocalExecutor, SQLite), a DAG run whose worker is SIGKILLed while its Spark
// application runs (the task process alone; then its supervisor with it, found by the missing
// heartbeats), Airflow's retry re-attaching to that same application (one application for the
// run, checked through the service's API) and deferring to the triggerer, and the task ending
// success with the driver log in its log; and a deferred task cleared through the REST API as
// the UI's Clear button does (tests/test_clear.py): the triggerer calls the trigger's on_kill, the
// application ends KILLED, the re-run submits its own, which COMPLETES. Real Airflow 3
// (SETUP_AIRFLOW=1's virtualenv), real Spark, the live service in local mode. One pytest session,
// so one set of Airflow's processes for the three (each start imports Airflow in four processes).
import t from 'tap';
import { runAirflowSuite } from '../helpers/pytest.js';

// A hang guard for three long cases one after another: together they passed the runner's 1,200 s
// per file at load 27-36 (no assertion failed).
t.setTimeout(45 * 60_000);

t.test('a worker killed while Spark runs (its task process; the whole worker) is retried by the scheduler and re-attaches to the same application; a cleared deferred task stops its application', async (t) => {
  await runAirflowSuite(t, ['tests/test_scheduler.py', 'tests/test_clear.py'], 3);
});
