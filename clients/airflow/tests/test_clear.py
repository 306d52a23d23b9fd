"""A deferred task cleared by its user, under Airflow's own scheduler, triggerer, dag-processor and
api-server (LocalExecutor, SQLite): the triggerer cancels try 1's trigger and calls its on_kill,
which stops the application; the re-run (try 2) sees from its context that the task was cleared
(its run's clear_number and its max_tries changed since try 1 recorded them, keys.cleared_since),
so it does not adopt try 1's application even while that still runs: it waits for the stop, then
submits a run of its own. (Before, the re-run could adopt it before the trigger's stop landed and
then fail with it KILLED.)"""
from airflow_processes import ended_log, wait_for
from submission_service import Client

CLEARED = "spark_cleared"


def test_clearing_a_deferred_task_stops_its_application_and_the_rerun_makes_a_new_one(airflow, components, url, job, tmp_path):
    release = tmp_path / "release"
    run_id = "clear-" + job
    wait_for("the DAG to be parsed", lambda: airflow.query("select 1 from serialized_dag where dag_id = ?", CLEARED), components)
    components.trigger(CLEARED, run_id, {"job": job, "release": str(release)})

    def task() -> tuple:
        rows = airflow.query("select try_number, state from task_instance where dag_id = ? and run_id = ?", CLEARED, run_id)
        return rows[0] if rows else (None, None)

    with Client(url) as client:
        first = wait_for("the application to run", lambda: [a["appName"] for a in client.list(job_name=job, state="RUNNING")], components)[0]
        wait_for("try 1 to defer", lambda: task() == (1, "deferred"), components)
        components.clear(CLEARED, run_id, ["pi"])
        # Bounded by the wait's timeout: without the trigger's on_kill it would run until released.
        assert client.wait(first, timeout=600)["state"] == "KILLED", "the cleared task's application is stopped"
        second = wait_for("the re-run's application", lambda: [a["appName"] for a in client.list(job_name=job) if a["appName"] != first], components)[0]
        release.touch()
        wait_for("the DAG run to end", lambda: airflow.query("select 1 from dag_run where run_id = ? and state in ('success', 'failed')", run_id), components)
        final = sorted((a["appName"], a["state"]) for a in client.list(job_name=job))
    try_two = ended_log(airflow, CLEARED, run_id, 2, "Spark application %s COMPLETED" % second, components)
    assert task() == (2, "success"), "%s\n%s" % (task(), try_two[-4000:])
    assert final == sorted([(first, "KILLED"), (second, "COMPLETED")]), "the stopped run and the re-run's own: %s" % final
    assert "Adopted" not in try_two and "Submitted %s (try 2)" % second in try_two, try_two[-4000:]
    # Told by the clear itself, whatever try 1's application was when try 2 looked (still RUNNING on a
    # quiet machine, where the trigger's stop had not landed yet; KILLED already under load).
    assert "The task was cleared since try 1 submitted" in try_two, try_two[-4000:]
    # Who stopped it: try 1's trigger (its lines go to a file of their own beside the try's log, per triggerer).
    task_dir = airflow.home / "logs" / ("dag_id=%s" % CLEARED) / ("run_id=%s" % run_id) / "task_id=pi"
    trigger_log = lambda: "".join(f.read_text(errors="replace") for f in sorted(task_dir.glob("attempt=1.log*")))  # noqa: E731
    stopped = "Stopped Spark application %s" % first
    try:
        wait_for("try 1's trigger log to say it stopped the application", lambda: stopped in trigger_log(), components, timeout=120)
    except AssertionError as waited:
        raise AssertionError("%s\n%s\n%s" % (waited, sorted(f.name for f in task_dir.iterdir()), trigger_log()[-4000:])) from None
