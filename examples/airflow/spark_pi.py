"""Airflow DAG: examples/pi.py on the Submission Service, with SparkApplicationOperator.

Needs the provider (pip install ./clients/python ./clients/airflow) and a connection named
submission_service_default (host = the service's URL, password = the API key), e.g.
    AIRFLOW_CONN_SUBMISSION_SERVICE_DEFAULT='{"conn_type": "submission_service", "host": "http://127.0.0.1:8080"}'
Run it once without a scheduler:  airflow dags test spark_pi
(`-c '{"partitions": "40"}'` for a longer run). pi.py is read by the service from this checkout
(local mode), found beside this file.
"""
import os
from datetime import datetime

from airflow.sdk import DAG, Param

from submission_service_airflow.operators import SparkApplicationOperator

# realpath: this file may be linked into Airflow's DAGs folder; pi.py is next to the real one.
PI = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "pi.py")

with DAG(
    dag_id="spark_pi",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    params={"partitions": Param("10", type="string", description="pi.py's argument: partitions of 100,000 samples")},
    tags=["example", "submission-service"],
    doc_md=__doc__,
):
    SparkApplicationOperator(
        task_id="pi",
        job_name="pi",
        submission_service_conn_id="submission_service_default",
        config_overrides={
            "type": "Python",
            "mainApplicationFile": "local://" + PI,
            "arguments": ["{{ params.partitions }}"],
            "executor": {"cores": 1, "instances": 1},
        },
        labels={"team": "examples"},
    )
