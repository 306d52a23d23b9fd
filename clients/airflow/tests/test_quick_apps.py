"""Airflow 3's deferral race under its own scheduler and triggerer (LocalExecutor, SQLite): 8 parallel
tasks whose applications end about a second after submission (dags/quick_apps.py), against a service
whose drivers are the fake-spark-submit TEST DOUBLE (test/clients/airflow-scheduler.test.ts starts it
beside the real Spark one and names it in SUBMISSION_SERVICE_FAKE_SPARK_URL). Without the trigger's
min_deferral_s, some of them are failed by the scheduler although their applications COMPLETED
(bench/airflow/quick-apps.ts measures how many); with it, every one succeeds on its first try. Under
the session's one set of Airflow's processes (conftest.py's `components`, a worker slot per task),
which test_scheduler.py's runs use after this one."""
from airflow_processes import wait_for
from submission_service import Client

DAG = "quick_apps"
TASKS = 8


def test_tasks_whose_applications_end_at_once_all_succeed_under_the_scheduler(airflow, fake_url, components, job):
    run_id = "quick-" + job
    wait_for("the DAG to be parsed", lambda: airflow.query("select 1 from serialized_dag where dag_id = ?", DAG), components)
    components.trigger(DAG, run_id, {"job": job})
    wait_for("the DAG run to end", lambda: airflow.query(
        "select 1 from dag_run where run_id = ? and state in ('success', 'failed')", run_id), components)

    tasks = airflow.query("select task_id, try_number, state from task_instance where dag_id = ? and run_id = ?", DAG, run_id)
    mismatches = airflow.query("select extra from log where event = 'state mismatch' and run_id = ?", run_id)
    assert sorted(tasks) == [("t%d" % i, 1, "success") for i in range(TASKS)], "%s\n%s%s" % (tasks, mismatches, components.tails())
    assert mismatches == [], "the scheduler took no stale exit for a kill"
    with Client(fake_url) as client:
        assert sorted(app["state"] for app in client.list(job_name=job)) == ["COMPLETED"] * TASKS
    held = 0
    for task_id, _, _ in tasks:
        assert "Pausing task as DEFERRED" in airflow.task_log(DAG, run_id, task_id, 1), "each task deferred to the triggerer"
        trigger_logs = airflow.home.glob("logs/dag_id=%s/run_id=%s/task_id=%s/attempt=1.log.trigger.*" % (DAG, run_id, task_id))
        held += any("COMPLETED; firing in" in path.read_text(errors="replace") for path in trigger_logs)
    # The racy case was met: triggers found their applications ended and held the event back.
    assert held > 0, "no trigger found its application ended before min_deferral_s: the race was not exercised"
