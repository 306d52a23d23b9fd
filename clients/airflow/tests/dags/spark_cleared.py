"""A test DAG for a run under a real scheduler and triggerer: one deferrable task (the operator as a
DAG author writes it) whose application runs until the test releases it, so the test can clear the
task while it is deferred. No retries: a cleared task's re-run is its only other try."""
from datetime import datetime
from pathlib import Path

from airflow.sdk import DAG, Param
from submission_service_airflow.operators import SparkApplicationOperator

APP = Path(__file__).resolve().parent.parent / "apps" / "until_released.py"

with DAG(dag_id="spark_cleared", schedule=None, start_date=datetime(2026, 1, 1), catchup=False,
         params={"job": Param("cleared", type="string"), "release": Param("/nonexistent", type="string")}) as dag:
    SparkApplicationOperator(
        task_id="pi",
        job_name="{{ params.job }}",
        config_overrides={"type": "Python", "mainApplicationFile": "local://%s" % APP,
                          "arguments": ["{{ params.release }}"], "executor": {"cores": 1, "instances": 1}},
        retries=0,
    )
