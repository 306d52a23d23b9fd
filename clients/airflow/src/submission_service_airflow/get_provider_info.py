"""What Airflow's ProvidersManager reads through the `apache_airflow_provider` entry point."""
from typing import Any, Dict

from . import __version__

# The connection form (Airflow 3's UI reads it from here; the hook answers the same to older UIs).
UI_FIELD_BEHAVIOUR: Dict[str, Any] = {
    "hidden-fields": ["schema", "login", "port", "extra"],
    "relabeling": {"host": "Service URL", "password": "API key"},
    "placeholders": {"host": "http://127.0.0.1:8080", "password": "empty with --auth off"},
}


def get_provider_info() -> Dict[str, Any]:
    return {
        "package-name": "submission-service-airflow",
        "name": "Submission Service",
        "description": "Runs Spark applications through the Submission Service's API.",
        "versions": [__version__],
        "integrations": [{"integration-name": "Submission Service", "tags": ["service"]}],
        "operators": [{"integration-name": "Submission Service",
                       "python-modules": ["submission_service_airflow.operators"]}],
        "hooks": [{"integration-name": "Submission Service", "python-modules": ["submission_service_airflow.hooks"]}],
        "triggers": [{"integration-name": "Submission Service",
                      "python-modules": ["submission_service_airflow.triggers"]}],
        "connection-types": [{
            "connection-type": "submission_service",
            "hook-class-name": "submission_service_airflow.hooks.SubmissionServiceHook",
            "hook-name": "Submission Service",
            "ui-field-behaviour": UI_FIELD_BEHAVIOUR,
        }],
        "extra-links": ["submission_service_airflow.links.SparkUiLink"],
    }
