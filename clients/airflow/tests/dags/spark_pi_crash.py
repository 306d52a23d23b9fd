"""A test DAG for a run under a real scheduler and triggerer: try 1 waits for its application in its
worker, the test SIGKILLs that task process while Spark runs, Airflow retries the task, and try 2
must re-attach to try 1's application (one application, not two) and defer to the triggerer."""
from pathlib import Path

from retried_once import retried_once
from submission_service_airflow.operators import SparkApplicationOperator

APP = Path(__file__).resolve().parent.parent / "apps" / "until_released.py"


class WaitsInItsWorkerOnTry1(SparkApplicationOperator):
    """Try 1 waits in its worker (deferrable=False), so there is a worker process to kill while
    Spark runs (a deferred task has none); later tries defer as the operator does by default."""

    def execute(self, context):
        self.deferrable = context["ti"].try_number > 1
        return super().execute(context)


dag = retried_once("spark_pi_crash", WaitsInItsWorkerOnTry1, APP, ["{{ params.release }}"],
                   {"job": "crash", "release": "/nonexistent"})
