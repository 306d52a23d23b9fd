"""Airflow 3's deferral race, measured: N parallel SparkApplicationOperator tasks whose applications
end about a second after submission (BENCH_APP_S; the fake-spark-submit TEST DOUBLE), under Airflow's own processes (api-server, scheduler,
dag-processor, triggerer; LocalExecutor, SQLite), RUNS DAG runs per mode, one DAG per mode in one
Airflow home:

  unheld   min_deferral_s=0: the trigger fires as soon as the application has ended (the provider before
           the fix)
  recheck  min_deferral_s=0, and the operator reads the application once more right before deferring
           and finishes in the worker when it has already ended (candidate (a) of issue 27)
  held     the provider's default min_deferral_s

A task the race hits is failed by the scheduler ("Executor ... reported that the task instance ...
finished with state success, but the task instance's state attribute is queued"; a `state mismatch`
row in Airflow's log table) although its application COMPLETED.

  python quick_apps.py URL       (env BENCH_TASKS, BENCH_RUNS, BENCH_MODES, BENCH_APP_S; AIRFLOW_HOME: an empty folder)
Prints one JSON line per mode: tasks, failed tasks, state-mismatch events, the tasks' mean and longest
time from the DAG run's start to their end, the DAG runs' mean duration, and how late the scheduler
received the executor's event of the worker that deferred: after the deferral, and after the trigger
started (the longest of each; what `min_deferral_s` must outlast).
"""
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from datetime import datetime
from typing import Any, Dict, List, Optional

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "clients" / "airflow" / "tests"))
from airflow_processes import AIRFLOW, Components, prepare_home, query, wait_for  # noqa: E402

TASKS = int(os.environ.get("BENCH_TASKS", "8"))
RUNS = int(os.environ.get("BENCH_RUNS", "3"))
APP_S = float(os.environ.get("BENCH_APP_S", "1"))
MODES = os.environ.get("BENCH_MODES", "unheld,recheck,held").split(",")

DAG_FILE = '''"""N parallel quick SparkApplicationOperator tasks per mode (written by bench/airflow/quick_apps.py)."""
from datetime import datetime
from airflow.sdk import DAG, Param
from submission_service import END_STATES
from submission_service_airflow.operators import SparkApplicationOperator


class RechecksBeforeDeferring(SparkApplicationOperator):
    """Candidate (a): an application that has already ended is finished in the worker, not deferred."""

    def defer(self, **kwargs):
        with self._hook().get_conn() as client:
            if client.get(self.app_name)["state"] in END_STATES:
                return  # execute() goes on to wait_in_worker, which answers at once, and finishes
        super().defer(**kwargs)


for mode in %(modes)r:
    with DAG(dag_id="quick_" + mode, schedule=None, start_date=datetime(2026, 1, 1), catchup=False,
             params={"job": Param("quick", type="string")}, max_active_tasks=%(tasks)d, max_active_runs=1):
        for i in range(%(tasks)d):
            operator = RechecksBeforeDeferring if mode == "recheck" else SparkApplicationOperator
            held = {} if mode == "held" else {"min_deferral_s": 0}
            operator(task_id="t%%d" %% i, job_name="{{ params.job }}", driver_log=False, **held,
                     config_overrides={"type": "Python", "mainApplicationFile": "local:///quick.py",
                                       "arguments": ["sleep=%(app_s)g"],
                                       "executor": {"cores": 1, "instances": 1}})
'''


STALE_EVENT = re.compile(r"^(\S+) .*Received executor event with state success for task instance TaskInstanceKey\("
                         r"dag_id='([^']+)', task_id='([^']+)', run_id='([^']+)', try_number=1,")


def instant(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def first_line_time(path: Path, needle: str) -> Optional[float]:
    for line in path.read_text(errors="replace").splitlines() if path.exists() else []:
        if needle in line:
            return instant(json.loads(line)["timestamp"])
    return None


def exit_report_lags(home: Path, dag_id: str, run_id: str) -> List[Dict[str, float]]:
    """Per deferred task: seconds from its deferral, and from its trigger's start, to the scheduler's
    receipt of the executor's event for the worker that deferred (the first success of try 1): what
    `min_deferral_s` must outlast."""
    reported: Dict[str, float] = {}
    for line in (home / "scheduler.log").read_text(errors="replace").splitlines():
        m = STALE_EVENT.match(line)
        if m and (m.group(2), m.group(4)) == (dag_id, run_id):
            reported.setdefault(m.group(3), instant(m.group(1)))
    lags = []
    for task_id, at in reported.items():
        folder = home / "logs" / ("dag_id=%s" % dag_id) / ("run_id=%s" % run_id) / ("task_id=%s" % task_id)
        deferred = first_line_time(folder / "attempt=1.log", "Pausing task as DEFERRED")
        started = min(filter(None, (first_line_time(f, "starting") for f in folder.glob("attempt=1.log.trigger.*"))), default=None)
        if deferred is not None and started is not None:
            lags.append({"afterDefer": at - deferred, "afterTriggerStart": at - started})
    return lags


def dag_run(home: Path, dag_id: str, run_id: str, components: Components) -> Dict[str, Any]:
    triggered = subprocess.run([AIRFLOW, "dags", "trigger", dag_id, "-r", run_id, "-c", json.dumps({"job": run_id})],
                               env=components.env, capture_output=True, text=True, timeout=600)
    assert triggered.returncode == 0, triggered.stdout + triggered.stderr
    start = time.monotonic()
    wait_for("the DAG run %s to end" % run_id, lambda: query(
        home, "select 1 from dag_run where run_id = ? and state in ('success', 'failed')", run_id), components)
    wall = time.monotonic() - start
    tis = query(home, "select t.state, (julianday(t.end_date) - julianday(r.start_date)) * 86400 from task_instance t "
                      "join dag_run r on r.dag_id = t.dag_id and r.run_id = t.run_id where t.dag_id = ? and t.run_id = ?",
                dag_id, run_id)
    mismatches = query(home, "select count(*) from log where event = 'state mismatch' and dag_id = ? and run_id = ?",
                       dag_id, run_id)[0][0]
    return {"wall": wall, "states": [t[0] for t in tis], "durations": [t[1] or 0 for t in tis], "mismatches": mismatches,
            "lags": exit_report_lags(home, dag_id, run_id)}


def main(url: str) -> None:
    home = Path(os.environ["AIRFLOW_HOME"])
    source = home / "dag-source" / "quick_apps.py"
    source.parent.mkdir(parents=True)
    source.write_text(DAG_FILE % {"tasks": TASKS, "modes": MODES, "app_s": APP_S})
    env = prepare_home(home, [source], url)
    rows: List[Dict[str, Any]] = []
    with Components(home, env, parallelism=TASKS) as airflow:
        for mode in MODES:
            wait_for("the DAGs to be parsed", lambda: query(home, "select 1 from serialized_dag where dag_id = ?", "quick_" + mode), airflow)
        for mode in MODES:
            runs = [dag_run(home, "quick_" + mode, "%s-%d-%d" % (mode, os.getpid(), n), airflow) for n in range(RUNS)]
            durations = [d for r in runs for d in r["durations"]]
            lags = [lag for r in runs for lag in r["lags"]]
            row = {"mode": mode, "tasks": len(durations), "failed": sum(s != "success" for r in runs for s in r["states"]),
                   "stateMismatches": sum(r["mismatches"] for r in runs),
                   "taskMeanS": round(sum(durations) / len(durations), 1), "taskMaxS": round(max(durations), 1),
                   "dagRunMeanS": round(sum(r["wall"] for r in runs) / len(runs), 1), "deferred": len(lags),
                   "exitReportedAfterDeferMaxS": round(max((lag["afterDefer"] for lag in lags), default=0), 1),
                   "exitReportedAfterTriggerStartMaxS": round(max((lag["afterTriggerStart"] for lag in lags), default=0), 1)}
            print(json.dumps(row), flush=True)
            rows.append(row)
    print(json.dumps(rows))


if __name__ == "__main__":
    main(sys.argv[1])
