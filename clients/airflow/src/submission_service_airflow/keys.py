"""Pure rules: the idempotency key of a task's submission, which earlier try's key a retry reuses,
what it does with that try's application (adopt it after a crash, stop it after a clear), and the
labels that say which Airflow task made an application."""
import hashlib
import json
import re
from typing import Any, Dict, Mapping, Optional

# Where an application can still be joined: a retry adopts it instead of starting a second run.
ACTIVE_STATES = frozenset({"PENDING", "RUNNING"})
# The task state store's key holding the record of the try whose idempotency key made the
# application (submission_record). An older provider stored the bare try number there.
KEY_TRY = "submission_service_key_try"
# What a new try does with an earlier try's application (earlier_application).
ADOPT, STOP, LEAVE = "adopt", "stop", "leave"
_LABEL_VALUE = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$")


def task_digest(dag_id: str, task_id: str, run_id: str, map_index: int) -> str:
    """One task instance (across its tries): 32 hex of a hash, since run ids and long DAG ids
    would not fit the key's 255 printable characters or a label's 63."""
    text = json.dumps([dag_id, task_id, run_id, map_index], separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def idempotency_key(dag_id: str, task_id: str, run_id: str, map_index: int, key_try: int) -> str:
    """The Idempotency-Key of the submission made under try `key_try` of this task instance."""
    return "airflow-%s-try-%d" % (task_digest(dag_id, task_id, run_id, map_index), key_try)


def submission_record(key_try: int, clear_number: Optional[int], max_tries: Optional[int]) -> Dict[str, int]:
    """What a try stores before it submits: its number, and the two values Airflow's clear changes
    and a retry does not (cleared_since): its DAG run's clear_number and its own max_tries."""
    return {"try": int(key_try), "clear_number": int(clear_number or 0), "max_tries": int(max_tries or 0)}


def key_try_to_reuse(stored: Any, try_number: int) -> Optional[int]:
    """The earlier try whose key a new try sends first (to find that try's application), or None
    when there is none: the first try, the same try again, or no state store (Airflow < 3.3)."""
    if isinstance(stored, Mapping):
        stored = stored.get("try")
    if not isinstance(stored, int) or isinstance(stored, bool) or stored == try_number:
        return None
    return stored


def cleared_since(stored: Any, now: Mapping[str, int]) -> bool:
    """Whether the task was cleared after the stored try recorded itself, told by values the task's
    context carries (`now`: this try's submission_record), since task code cannot read the earlier
    try's end state (task_instance_history is not in the Execution API). Airflow's
    clear_task_instances adds one to the run's clear_number (unless asked to leave the run alone)
    and sets a task that is not running to max_tries = try_number + retries, above the old value
    unless the DAG's retries were lowered; a retry after a crash (the try failed, or its heartbeats
    stopped) changes neither. A clear of another task of the same run counts too: this try then
    stops and resubmits, which is safe, only not thrifty. A record without the values (an older
    provider's bare number) counts as cleared: adopting is for a crash that is shown."""
    if not isinstance(stored, Mapping):
        return True
    return any(stored.get(name) != now.get(name) for name in ("clear_number", "max_tries"))


def earlier_application(app_state: Optional[str], cleared: bool) -> str:
    """ADOPT an earlier try's application that still runs when that try crashed: one run, not
    two. STOP it when the task was cleared since (the user asked for a new run; the cleared try's
    kill normally stops it first, see the operator). LEAVE an ended one: it is history, and a
    retry after a failure, or a cleared task even after COMPLETED, means a new run."""
    if app_state not in ACTIVE_STATES:
        return LEAVE
    return STOP if cleared else ADOPT


def task_labels(dag_id: str, task_id: str, run_id: str, map_index: int) -> Dict[str, str]:
    """Labels naming the task (without the try: a retry must send the same body as the try whose
    key it reuses). Ids that are no valid label value are left out; the run is always a hash."""
    labels = {"airflow-run": task_digest(dag_id, "", run_id, -1)[:16],
              "airflow-task-instance": task_digest(dag_id, task_id, run_id, map_index)[:16]}
    for name, value in (("airflow-dag", dag_id), ("airflow-task", task_id)):
        if _LABEL_VALUE.match(value):
            labels[name] = value
    return labels
