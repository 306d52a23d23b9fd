"""What the retry test DAGs share (not a DAG itself): one task "pi" of an operator class that Airflow
tries twice (retries=1, no delay), running a Python file with its arguments on one executor, the
job's name from the run's params."""
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Dict, List, Type

from airflow.sdk import DAG, Param

from submission_service_airflow.operators import SparkApplicationOperator


def retried_once(dag_id: str, operator: Type[SparkApplicationOperator], app: Path, arguments: List[str],
                 params: Dict[str, Any]) -> DAG:
    """The DAG `dag_id`; `params` are the run's params as defaults (`job` among them)."""
    with DAG(dag_id=dag_id, schedule=None, start_date=datetime(2026, 1, 1), catchup=False,
             params={name: Param(value, type="string") for name, value in params.items()}) as dag:
        operator(
            task_id="pi",
            job_name="{{ params.job }}",
            config_overrides={"type": "Python", "mainApplicationFile": "local://%s" % app, "arguments": arguments,
                              "executor": {"cores": 1, "instances": 1}},
            retries=1,
            retry_delay=timedelta(seconds=0),
        )
    return dag
