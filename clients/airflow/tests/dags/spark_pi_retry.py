"""A test DAG: try 1 loses its worker right after the submission; Airflow retries the task, and
try 2 must adopt the application try 1 made (one application, not two)."""
from pathlib import Path

from retried_once import retried_once
from submission_service_airflow.operators import SparkApplicationOperator

PI = Path(__file__).resolve().parent.parent.parent.parent.parent / "examples" / "pi.py"


class WorkerLostAfterSubmit(SparkApplicationOperator):
    """Try 1 stands for a worker that died after its POST was answered (Airflow runs `dags test`
    tasks in its own process, so the death is an exception here): the application runs on."""

    def execute(self, context):
        if context["ti"].try_number == 1:
            with self._hook().get_conn() as client:
                app = self.submit_or_adopt(client, context)
            raise RuntimeError("worker lost after submitting %s" % app["appName"])
        return super().execute(context)


dag = retried_once("spark_pi_retry", WorkerLostAfterSubmit, PI, ["20"], {"job": "pi-retry"})
