"""Pure rules: the idempotency key of a task's submission, which earlier try's key a retry reuses,
and the labels that say which Airflow task made an application."""
import hashlib
import json
import re
from typing import Dict, Optional

# Where an application can still be joined: a retry adopts it instead of starting a second run.
ACTIVE_STATES = frozenset({"PENDING", "RUNNING"})
# The task state store's key holding the try number whose idempotency key made the application.
KEY_TRY = "submission_service_key_try"
_LABEL_VALUE = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$")


def task_digest(dag_id: str, task_id: str, run_id: str, map_index: int) -> str:
    """One task instance (across its tries): 32 hex of a hash, since run ids and long DAG ids
    would not fit the key's 255 printable characters or a label's 63."""
    text = json.dumps([dag_id, task_id, run_id, map_index], separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def idempotency_key(dag_id: str, task_id: str, run_id: str, map_index: int, key_try: int) -> str:
    """The Idempotency-Key of the submission made under try `key_try` of this task instance."""
    return "airflow-%s-try-%d" % (task_digest(dag_id, task_id, run_id, map_index), key_try)


def key_try_to_reuse(stored: Optional[int], try_number: int) -> Optional[int]:
    """The earlier try whose key a new try sends first (to find that try's application), or None
    when there is none: the first try, the same try again, or no state store (Airflow < 3.3)."""
    if stored is None or stored == try_number:
        return None
    return int(stored)


def adoptable(app_state: Optional[str]) -> bool:
    """An earlier try's application is adopted only while it runs. An ended one is history: a
    retry after a failure, or a cleared task, means a new run."""
    return app_state in ACTIVE_STATES


def task_labels(dag_id: str, task_id: str, run_id: str, map_index: int) -> Dict[str, str]:
    """Labels naming the task (without the try: a retry must send the same body as the try whose
    key it reuses). Ids that are no valid label value are left out; the run is always a hash."""
    labels = {"airflow-run": task_digest(dag_id, "", run_id, -1)[:16],
              "airflow-task-instance": task_digest(dag_id, task_id, run_id, map_index)[:16]}
    for name, value in (("airflow-dag", dag_id), ("airflow-task", task_id)):
        if _LABEL_VALUE.match(value):
            labels[name] = value
    return labels
