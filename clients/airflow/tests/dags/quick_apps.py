"""A test DAG for a run under a real scheduler and triggerer: 8 parallel tasks whose applications end
about a second after submission (the fake-spark-submit TEST DOUBLE's `sleep=1`), so each trigger finds
its application ended while Airflow is still taking in the exit of the worker that deferred: the race
the trigger's `min_deferral_s` guards against (triggers.py). Its tasks use the connection
submission_service_fake: a second service, whose drivers are all that TEST DOUBLE, beside the real
Spark one of the same session (test/clients/airflow-scheduler.test.ts starts both; conftest.py
names it from SUBMISSION_SERVICE_FAKE_SPARK_URL)."""
from datetime import datetime

from airflow.sdk import DAG, Param

from submission_service_airflow.operators import SparkApplicationOperator

TASKS = 8

with DAG(dag_id="quick_apps", schedule=None, start_date=datetime(2026, 1, 1), catchup=False,
         params={"job": Param("quick", type="string")}, max_active_tasks=TASKS):
    for i in range(TASKS):
        SparkApplicationOperator(task_id="t%d" % i, job_name="{{ params.job }}", submission_service_conn_id="submission_service_fake",
                                 config_overrides={"type": "Python", "mainApplicationFile": "local:///quick.py",
                                                   "arguments": ["sleep=1"], "executor": {"cores": 1, "instances": 1}})
