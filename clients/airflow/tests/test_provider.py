"""The provider as Airflow sees it, and the key rules (pure)."""
from airflow.providers_manager import ProvidersManager

from submission_service_airflow import keys


def test_airflow_discovers_the_connection_type_hook_and_extra_link():
    manager = ProvidersManager()
    assert "submission-service-airflow" in manager.providers
    hook = manager.hooks["submission_service"]
    assert hook is not None and hook.hook_class_name == "submission_service_airflow.hooks.SubmissionServiceHook"
    assert hook.connection_id_attribute_name == "submission_service_conn_id"
    assert "submission_service_airflow.links.SparkUiLink" in manager.extra_links_class_names
    behaviour = manager.field_behaviours["submission_service"]
    assert behaviour["relabeling"] == {"host": "Service URL", "password": "API key"}


def test_the_key_names_the_task_instance_and_the_try():
    key = keys.idempotency_key("dag", "task", "manual__2026-01-01T00:00:00+00:00", -1, 1)
    assert key == keys.idempotency_key("dag", "task", "manual__2026-01-01T00:00:00+00:00", -1, 1), "stable"
    others = {keys.idempotency_key(*args) for args in [("dag", "task", "manual__2026-01-01T00:00:00+00:00", -1, 2),
                                                       ("dag", "task", "manual__2026-01-02T00:00:00+00:00", -1, 1),
                                                       ("dag", "task", "manual__2026-01-01T00:00:00+00:00", 0, 1),
                                                       ("dag", "other", "manual__2026-01-01T00:00:00+00:00", -1, 1)]}
    assert key not in others and len(others) == 4
    assert len(key) <= 255 and key.isascii()


def test_a_retry_reuses_the_recorded_try():
    assert keys.key_try_to_reuse(None, 1) is None, "first try"
    assert keys.key_try_to_reuse(keys.submission_record(1, 0, 1), 1) is None, "the same try again sends its own key"
    assert keys.key_try_to_reuse(keys.submission_record(1, 0, 1), 2) == 1
    assert keys.key_try_to_reuse(keys.submission_record(2, 0, 4), 5) == 2, "the try that made the application, not the one before"
    assert keys.key_try_to_reuse(2, 3) == 2, "an older provider's bare number"
    assert keys.key_try_to_reuse({"other": 1}, 2) is None and keys.key_try_to_reuse(True, 2) is None, "not a record"


def test_labels_name_the_task_without_the_try_and_only_with_valid_values():
    labels = keys.task_labels("spark_pi", "pi", "manual__2026-01-01T00:00:00+00:00", -1)
    assert labels["airflow-dag"] == "spark_pi" and labels["airflow-task"] == "pi"
    assert len(labels["airflow-run"]) == 16 and len(labels["airflow-task-instance"]) == 16
    odd = keys.task_labels("x" * 70, "-bad", "r", 0)
    assert "airflow-dag" not in odd and "airflow-task" not in odd
