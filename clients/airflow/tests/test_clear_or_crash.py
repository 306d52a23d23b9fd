"""Whether a new try adopts an earlier try's application (its worker crashed) or stops it (the task
was cleared): the pure rules of keys.py, and SparkApplicationOperator.submit_or_adopt on them with a
stand-in client and state store (no service, no scheduler: test_scheduler.py and test_clear.py run
both cases under Airflow's own processes)."""
from types import SimpleNamespace
from typing import Any, Dict, List, Optional

import pytest
from submission_service import WaitTimeout

from submission_service_airflow import keys
from submission_service_airflow.operators import SparkApplicationOperator

STATES = ("PENDING", "RUNNING", "COMPLETED", "FAILED", "KILLED", "UNKNOWN", None)


def test_a_running_application_is_adopted_after_a_crash_and_stopped_after_a_clear():
    assert {s: keys.earlier_application(s, cleared=False) for s in STATES} == {
        "PENDING": keys.ADOPT, "RUNNING": keys.ADOPT, "COMPLETED": keys.LEAVE, "FAILED": keys.LEAVE,
        "KILLED": keys.LEAVE, "UNKNOWN": keys.LEAVE, None: keys.LEAVE}
    assert {s: keys.earlier_application(s, cleared=True) for s in STATES} == {
        "PENDING": keys.STOP, "RUNNING": keys.STOP, "COMPLETED": keys.LEAVE, "FAILED": keys.LEAVE,
        "KILLED": keys.LEAVE, "UNKNOWN": keys.LEAVE, None: keys.LEAVE}


def test_a_clear_is_told_from_a_crash_by_the_runs_clear_number_and_the_tasks_max_tries():
    try_one = keys.submission_record(1, 0, 1)
    assert try_one == {"try": 1, "clear_number": 0, "max_tries": 1}
    assert not keys.cleared_since(try_one, keys.submission_record(2, 0, 1)), "a retry after a crash changes neither"
    assert keys.cleared_since(try_one, keys.submission_record(2, 1, 2)), "a deferred or failed task cleared: both"
    assert keys.cleared_since(try_one, keys.submission_record(2, 1, 1)), "a running task cleared (restarting): the run's count"
    assert keys.cleared_since(try_one, keys.submission_record(2, 0, 2)), "cleared without resetting the run: max_tries"
    assert keys.cleared_since(1, keys.submission_record(2, 0, 1)), "an older provider's bare number shows no crash"
    assert keys.cleared_since(None, keys.submission_record(2, 0, 1))
    assert keys.submission_record(1, None, None) == {"try": 1, "clear_number": 0, "max_tries": 0}, "values Airflow left out"


class Store:
    def __init__(self, value: Any = None) -> None:
        self.values: Dict[str, Any] = {} if value is None else {keys.KEY_TRY: value}

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    def set(self, key: str, value: Any) -> None:
        self.values[key] = value


class FakeClient:
    """Applications by idempotency key; `ends_by_itself` is what a wait sees (None: WaitTimeout)."""

    def __init__(self, ends_by_itself: Optional[str] = "KILLED") -> None:
        self.apps: Dict[str, Dict[str, Any]] = {}
        self.ends_by_itself = ends_by_itself
        self.calls: List[str] = []

    def submit(self, *, idempotency_key: str, labels: Dict[str, str], **_: Any) -> Dict[str, Any]:
        self.calls.append("submit " + idempotency_key.rsplit("-", 1)[1])
        return self.apps.setdefault(idempotency_key, {"appName": "app-%d" % len(self.apps), "state": "RUNNING", "labels": labels})

    def list(self, label_selector: Dict[str, str]) -> Any:
        self.calls.append("list")
        return iter([a for a in self.apps.values() if label_selector.items() <= a["labels"].items()])

    def wait(self, name: str, timeout: float) -> Dict[str, Any]:
        self.calls.append("wait %s" % name)
        if self.ends_by_itself is None:
            raise WaitTimeout("%s did not end within %s s" % (name, timeout))
        return self._set(name, self.ends_by_itself)

    def stop(self, name: str) -> Dict[str, Any]:
        self.calls.append("stop %s" % name)
        return self._set(name, "KILLED")

    def app(self, name: str) -> Dict[str, Any]:
        return next(a for a in self.apps.values() if a["appName"] == name)

    def _set(self, name: str, state: str) -> Dict[str, Any]:
        self.app(name)["state"] = state
        return dict(self.app(name))


def context(try_number: int, clear_number: int, max_tries: int, store: Store) -> Dict[str, Any]:
    ti = SimpleNamespace(dag_id="d", task_id="t", run_id="r", map_index=-1, try_number=try_number, max_tries=max_tries)
    return {"ti": ti, "dag_run": SimpleNamespace(clear_number=clear_number), "task_state_store": store}


def first_try(client: FakeClient, store: Store, operator: SparkApplicationOperator) -> str:
    name = operator.submit_or_adopt(client, context(1, 0, 1, store))["appName"]
    assert store.values[keys.KEY_TRY] == {"try": 1, "clear_number": 0, "max_tries": 1}, "recorded before the POST"
    client.calls.clear()
    return name


@pytest.fixture
def operator() -> SparkApplicationOperator:
    return SparkApplicationOperator(task_id="t", job_name="j", config_overrides={"type": "Python"})


def test_the_retry_after_a_crash_adopts_the_running_application(operator):
    client, store = FakeClient(), Store()
    first = first_try(client, store, operator)
    assert operator.submit_or_adopt(client, context(2, 0, 1, store))["appName"] == first
    assert client.calls == ["submit 1"], "try 1's key answers try 1's application"
    assert store.values[keys.KEY_TRY]["try"] == 1, "the record stays the try that made it"


@pytest.mark.parametrize("ends_by_itself", ["KILLED", None], ids=["stopped by the cleared try's kill", "stopped by the re-run"])
def test_the_run_after_a_clear_waits_for_the_old_application_to_stop_and_submits_its_own(operator, ends_by_itself):
    client, store = FakeClient(ends_by_itself), Store()
    first = first_try(client, store, operator)
    second = operator.submit_or_adopt(client, context(2, 1, 2, store))["appName"]
    assert second != first and client.app(first)["state"] == "KILLED"
    stops = ["stop %s" % first] if ends_by_itself is None else []
    assert client.calls == ["list", "wait %s" % first, *stops, "submit 2"], "nothing made by asking, stopped before the submission"
    assert store.values[keys.KEY_TRY] == {"try": 2, "clear_number": 1, "max_tries": 2}


def test_the_run_after_a_clear_leaves_an_ended_application_alone(operator):
    client, store = FakeClient(), Store()
    first = first_try(client, store, operator)
    client.app(first)["state"] = "COMPLETED"
    operator.submit_or_adopt(client, context(2, 1, 2, store))
    assert client.calls == ["list", "submit 2"] and client.app(first)["state"] == "COMPLETED"
