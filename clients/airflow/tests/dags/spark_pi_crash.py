"""A test DAG for a run under a real scheduler and triggerer: try 1 waits for its application in its
worker, the test SIGKILLs that task process while Spark runs, Airflow retries the task, and try 2
must re-attach to try 1's application (one application, not two) and defer to the triggerer."""
from datetime import datetime, timedelta
from pathlib import Path

from airflow.sdk import DAG, Param

from submission_service_airflow.operators import SparkApplicationOperator

APP = Path(__file__).resolve().parent.parent / "apps" / "until_released.py"


class WaitsInItsWorkerOnTry1(SparkApplicationOperator):
    """Try 1 waits in its worker (deferrable=False), so there is a worker process to kill while
    Spark runs (a deferred task has none); later tries defer as the operator does by default."""

    def execute(self, context):
        self.deferrable = context["ti"].try_number > 1
        return super().execute(context)


with DAG(dag_id="spark_pi_crash", schedule=None, start_date=datetime(2026, 1, 1), catchup=False,
         params={"job": Param("crash", type="string"), "release": Param("/nonexistent", type="string")}):
    WaitsInItsWorkerOnTry1(
        task_id="pi",
        job_name="{{ params.job }}",
        config_overrides={"type": "Python", "mainApplicationFile": "local://%s" % APP, "arguments": ["{{ params.release }}"],
                          "executor": {"cores": 1, "instances": 1}},
        retries=1,
        retry_delay=timedelta(seconds=0),
    )
