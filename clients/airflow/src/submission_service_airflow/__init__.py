"""Airflow provider of the Submission Service: the `submission_service` connection type, a hook and
`submission_service_airflow.operators.SparkApplicationOperator` (deferrable)."""
__version__ = "0.1.0"
