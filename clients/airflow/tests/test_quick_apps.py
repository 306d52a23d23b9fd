"""Airflow 3's deferral race under its own scheduler and triggerer (LocalExecutor, SQLite): 8 parallel
tasks whose applications end about a second after submission (dags/quick_apps.py), against a service
whose drivers are the fake-spark-submit TEST DOUBLE (test/clients/airflow-quick-apps.test.ts starts
it and sets SUBMISSION_SERVICE_FAKE_SPARK). Without the trigger's min_deferral_s, some of them are
failed by the scheduler although their applications COMPLETED (bench/airflow/quick-apps.ts measures
how many); with it, every one succeeds on its first try."""
import os

import pytest
from airflow_processes import Components, wait_for
from submission_service import Client

DAG = "quick_apps"
TASKS = 8


@pytest.fixture()
def scheduler(airflow):
    """Airflow's processes with a worker slot for every task at once (the race needs them to overlap)."""
    if not os.environ.get("SUBMISSION_SERVICE_FAKE_SPARK"):
        pytest.fail("needs a service whose drivers are the fake-spark-submit TEST DOUBLE (SUBMISSION_SERVICE_FAKE_SPARK)")
    with Components(airflow.home, airflow.env, parallelism=TASKS) as running:
        yield running


def test_tasks_whose_applications_end_at_once_all_succeed_under_the_scheduler(airflow, scheduler, url, job):
    run_id = "quick-" + job
    wait_for("the DAG to be parsed", lambda: airflow.query("select 1 from serialized_dag where dag_id = ?", DAG), scheduler)
    scheduler.trigger(DAG, run_id, {"job": job})
    wait_for("the DAG run to end", lambda: airflow.query(
        "select 1 from dag_run where run_id = ? and state in ('success', 'failed')", run_id), scheduler)

    tasks = airflow.query("select task_id, try_number, state from task_instance where dag_id = ? and run_id = ?", DAG, run_id)
    mismatches = airflow.query("select extra from log where event = 'state mismatch' and run_id = ?", run_id)
    assert sorted(tasks) == [("t%d" % i, 1, "success") for i in range(TASKS)], "%s\n%s%s" % (tasks, mismatches, scheduler.tails())
    assert mismatches == [], "the scheduler took no stale exit for a kill"
    with Client(url) as client:
        assert sorted(app["state"] for app in client.list(job_name=job)) == ["COMPLETED"] * TASKS
    held = 0
    for task_id, _, _ in tasks:
        assert "Pausing task as DEFERRED" in airflow.task_log(DAG, run_id, task_id, 1), "each task deferred to the triggerer"
        trigger_logs = airflow.home.glob("logs/dag_id=%s/run_id=%s/task_id=%s/attempt=1.log.trigger.*" % (DAG, run_id, task_id))
        held += any("COMPLETED; firing in" in path.read_text(errors="replace") for path in trigger_logs)
    # The racy case was met: triggers found their applications ended and held the event back.
    assert held > 0, "no trigger found its application ended before min_deferral_s: the race was not exercised"
