"""A DAG run under Airflow's own scheduler, triggerer, dag-processor and api-server (LocalExecutor,
SQLite: what `airflow standalone` runs) whose worker is SIGKILLed while its Spark application runs:
Airflow retries the task and the retry re-attaches to the same application.

Two deaths: the task process alone (its supervisor, the LocalExecutor's worker, reports it at
once), and the whole worker, supervisor and task process together (as when a worker host dies: the
scheduler finds it by the task's missing heartbeats)."""
import os
import signal

import psutil
import pytest
from airflow_processes import ended_log, wait_for
from submission_service import Client

DAG = "spark_pi_crash"


@pytest.mark.parametrize("kill", ["task process", "whole worker"])
def test_a_worker_killed_while_spark_runs_is_retried_and_reattaches_to_the_same_application(airflow, components, url, job, tmp_path, kill):
    release = tmp_path / "release"
    run_id = "crash-" + job
    wait_for("the DAG to be parsed", lambda: airflow.query("select 1 from serialized_dag where dag_id = ?", DAG), components)
    components.trigger(DAG, run_id, {"job": job, "release": str(release)})

    def task() -> tuple:
        rows = airflow.query("select try_number, state, pid from task_instance where dag_id = ? and run_id = ?", DAG, run_id)
        return rows[0] if rows else (None, None, None)

    with Client(url) as client:
        app_name = wait_for("the application to run", lambda: [a["appName"] for a in client.list(job_name=job, state="RUNNING")], components)[0]
        try_number, state, pid = task()
        # Said with try 1's own log: once, on a loaded machine, try 1 had been retried already.
        assert (try_number, state) == (1, "running") and pid, "try 1 is in its worker, waiting: %s\n%s%s" % (
            task(), airflow.task_log(DAG, run_id, "pi", 1)[-4000:], components.tails())
        # Try 1's log lines reach its file through its supervisor: killed with it ("whole worker"),
        # the lines it had not written yet are lost. Killed once the submission is in the file.
        submitted = "Submitted %s (try 1)" % app_name
        wait_for("try 1's log to say it submitted", lambda: submitted in airflow.task_log(DAG, run_id, "pi", 1), components)
        task_process = psutil.Process(pid)
        doomed = [task_process] if kill == "task process" else [task_process.parent(), task_process]
        for process in doomed:
            os.kill(process.pid, signal.SIGKILL)

        wait_for("try 2 to defer", lambda: task()[:2] == (2, "deferred"), components)
        apps = [(a["appName"], a["state"]) for a in client.list(job_name=job)]
        assert apps == [(app_name, "RUNNING")], "one application, running on through the kill: %s" % apps

        release.touch()
        wait_for("the DAG run to end", lambda: airflow.query("select 1 from dag_run where run_id = ? and state in ('success', 'failed')", run_id), components)
        final = [(a["appName"], a["state"]) for a in client.list(job_name=job)]
    try_one, try_two = airflow.task_log(DAG, run_id, "pi", 1), ended_log(airflow, DAG, run_id, 2, "Spark application %s COMPLETED" % app_name, components)
    assert task()[:2] == (2, "success"), "%s\n%s" % (task(), try_two[-4000:])
    assert final == [(app_name, "COMPLETED")], "one application for the run, checked through the API: %s" % final
    assert "Submitted %s (try 1)" % app_name in try_one, try_one[-4000:]
    if kill == "task process":
        assert "SIGKILL" in try_one, "the supervisor saw the kill: %s" % try_one[-4000:]
    assert "Adopted %s, submitted by try 1 and still RUNNING" % app_name in try_two, try_two[-4000:]
    assert "Pausing task as DEFERRED" in try_two, "try 2 waited in the triggerer, not in a worker"
    assert "[driver] Released after counting 1000 rows" in try_two, "the driver log is in the retry's task log: %s" % try_two[-4000:]
    assert airflow.xcom(DAG, "return_value") == app_name
