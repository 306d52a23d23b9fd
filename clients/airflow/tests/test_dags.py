"""`airflow dags test` (real Airflow, its in-line triggerer) of the example DAG and of a retried task,
against the live service."""
from submission_service import Client


def test_example_dag_runs_pi_to_success_with_the_driver_log_and_the_link(airflow, url):
    result = airflow.dags_test("spark_pi", "2026-01-01")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    assert airflow.task_states("spark_pi") == ["success"], output[-4000:]
    assert "[DAG TEST] running trigger in line" in output, "the task deferred to a trigger"
    assert "[driver] Pi is roughly" in output, "the driver log is in the task log"
    app_name = airflow.xcom("spark_pi", "app_name")
    assert app_name and airflow.xcom("spark_pi", "return_value") == app_name
    link = airflow.xcom("spark_pi", "spark_ui_url")
    assert link == "%s/dashboard/apps/%s/spark-ui/" % (url, app_name)
    with Client(url) as client:
        app = client.get(app_name)
        assert app["state"] == "COMPLETED"
        assert app["labels"]["team"] == "examples" and app["labels"]["airflow-dag"] == "spark_pi"
        assert app["sparkUi"]["url"] and link.endswith(app["sparkUi"]["url"]), "the link XCom holds is the app's own"


def test_a_failing_application_fails_the_task_with_its_state_detail(airflow, url):
    result = airflow.dags_test("spark_pi", "2026-01-02", {"partitions": "not-a-number"})
    output = result.stdout + result.stderr
    assert airflow.task_states("spark_pi") == ["failed"], output[-4000:]
    app_name = airflow.xcom("spark_pi", "app_name")
    with Client(url) as client:
        app = client.get(app_name)
    assert app["state"] == "FAILED" and app["stateDetail"]
    assert "Spark application %s ended FAILED: %s" % (app_name, app["stateDetail"]) in output, output[-4000:]
    assert "[driver] ValueError" in output, "the driver's error is in the task log"


def test_a_retried_task_adopts_the_application_of_the_try_that_lost_its_worker(airflow, url, job):
    result = airflow.dags_test("spark_pi_retry", "2026-01-03", {"job": job})
    output = result.stdout + result.stderr
    assert "worker lost after submitting" in output, "try 1 ended without waiting"
    assert airflow.task_states("spark_pi_retry") == ["success"], output[-4000:]
    with Client(url) as client:
        apps = list(client.list(job_name=job))
    assert len(apps) == 1, "one application, not two: %s" % [a["appName"] for a in apps]
    assert apps[0]["state"] == "COMPLETED"
    assert "Adopted %s, submitted by try 1" % apps[0]["appName"] in output, output[-4000:]
    assert airflow.xcom("spark_pi_retry", "return_value") == apps[0]["appName"]
