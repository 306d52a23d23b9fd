"""What N concurrent SparkApplicationOperator tasks cost Airflow itself while Spark runs, under
Airflow's own processes (api-server, scheduler, dag-processor, triggerer; LocalExecutor, SQLite: what
`airflow standalone` runs), one DAG run of N parallel tasks per mode, the modes one after the other
under one set of those processes (a mode's figures are what changed over its own DAG run):

  deferrable  the operator's default: each task submits, then hands its wait to the triggerer
  worker      deferrable=False: each task waits in its worker slot (on the events stream)

  python scheduled.py URL MODE...  (env BENCH_TASKS, BENCH_HOLD_S; AIRFLOW_HOME: an empty folder)
Prints one JSON line, a list of one row per mode: worker-slot-seconds (task instances in state
`running`, sampled every 0.25 s, integrated), deferred-seconds, the most tasks running at once, trigger -> first and -> all
applications RUNNING, trigger -> the DAG run's end, and the CPU seconds of the triggerer and of the
scheduler with its executor's workers and their task processes.
"""
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import psutil
from submission_service import Client

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "clients" / "airflow" / "tests"))
from airflow_processes import Components, prepare_home, query, wait_for  # noqa: E402

TASKS = int(os.environ.get("BENCH_TASKS", "10"))
HOLD_S = float(os.environ.get("BENCH_HOLD_S", "30"))
SAMPLE_S = 0.25

DAG_FILE = '''"""N parallel SparkApplicationOperator tasks (written by bench/airflow/scheduled.py)."""
from datetime import datetime
from airflow.sdk import DAG, Param
from submission_service_airflow.operators import SparkApplicationOperator

with DAG(dag_id="bench_wait_%(mode)s", schedule=None, start_date=datetime(2026, 1, 1), catchup=False,
         params={"job": Param("bench", type="string")}, max_active_tasks=%(tasks)d):
    for i in range(%(tasks)d):
        SparkApplicationOperator(task_id="t%%d" %% i, job_name="{{ params.job }}", deferrable=%(deferrable)s,
                                 config_overrides={"type": "Python", "mainApplicationFile": "local:///bench.py",
                                                   "arguments": ["sleep=%(hold)g"], "executor": {"cores": 1, "instances": 1}})
'''


def cpu_seconds(process: psutil.Process) -> float:
    """The process's CPU, its ended children's, and its live descendants' (each once)."""
    total = 0.0
    for p in [process, *process.children(recursive=True)]:
        try:
            t = p.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


class TaskSeconds:
    """The DAG run's task instances by state, sampled every SAMPLE_S and integrated into task-seconds, and
    when the first and all `tasks` of its runs had started (by the count `started` gives, asked until all have)."""

    def __init__(self, home: Path, dag_id: str, start: float, tasks: int) -> None:
        self.home, self.dag_id, self.start, self.tasks = home, dag_id, start, tasks
        self.slot_s = self.deferred_s = 0.0
        self.most_running = 0
        self.first_running: Optional[float] = None
        self.all_running: Optional[float] = None

    def sample(self, started: Callable[[], int]) -> None:
        states: Dict[str, int] = dict(query(self.home, "select state, count(*) from task_instance where dag_id = ? group by state", self.dag_id))
        self.slot_s += states.get("running", 0) * SAMPLE_S
        self.deferred_s += states.get("deferred", 0) * SAMPLE_S
        self.most_running = max(self.most_running, states.get("running", 0))
        if self.all_running is None:
            count = started()
            self.first_running = self.first_running or (time.monotonic() - self.start if count else None)
            self.all_running = time.monotonic() - self.start if count >= self.tasks else None

    def figures(self) -> Dict[str, Any]:
        return {"workerSlotS": round(self.slot_s, 1), "deferredS": round(self.deferred_s, 1), "mostRunning": self.most_running,
                "firstRunningS": round(self.first_running or 0, 1), "allRunningS": round(self.all_running or 0, 1)}


def run_ended(home: Path, dag_id: str) -> List[str]:
    """The DAG run's state once it has ended (success or failed), else nothing."""
    return [r[0] for r in query(home, "select state from dag_run where dag_id = ? and state in ('success', 'failed')", dag_id)]


def sample_until_ended(home: Path, dag_id: str, airflow: Components, client: Client, job: str, start: float) -> Dict[str, Any]:
    """Every SAMPLE_S until the DAG run ends: task-seconds by state and, until all are, how many of the job's
    applications have left PENDING."""
    seconds = TaskSeconds(home, dag_id, start, TASKS)
    while True:
        seconds.sample(lambda: sum(app["state"] != "PENDING" for app in client.list(job_name=job)))
        ended = run_ended(home, dag_id)
        if ended:
            assert ended == ["success"], "the DAG run ended %s: %s%s" % (ended, query(
                home, "select task_id, try_number, state from task_instance where dag_id = ?", dag_id), airflow.tails())
            return seconds.figures()
        airflow.check_alive()
        time.sleep(SAMPLE_S)


def run_mode(home: Path, mode: str, airflow: Components, client: Client) -> Dict[str, Any]:
    """One DAG run of the mode's DAG; the components' CPU is counted from just before it is triggered."""
    dag_id = "bench_wait_%s" % mode
    job = "bench-%s-%d" % (mode, os.getpid())
    wait_for("the DAG to be parsed", lambda: query(home, "select 1 from serialized_dag where dag_id = ?", dag_id), airflow)
    processes = {name: psutil.Process(p.pid) for name, p in airflow.processes.items()}
    cpu0 = {name: cpu_seconds(p) for name, p in processes.items()}
    start = time.monotonic()
    airflow.trigger(dag_id, None, {"job": job})
    figures = sample_until_ended(home, dag_id, airflow, client, job, start)
    wall = time.monotonic() - start
    cpu = {name: round(cpu_seconds(p) - cpu0[name], 2) for name, p in processes.items()}
    return {"mode": mode, "tasks": TASKS, "holdS": HOLD_S, **figures, "runS": round(wall, 1),
            "triggererCpuS": cpu["triggerer"], "schedulerCpuS": cpu["scheduler"]}


def main(url: str, modes: List[str]) -> None:
    """Every mode's DAG in one home, run under one set of Airflow's processes: a set's start (four
    processes importing Airflow, the api-server booting) costs ~30 CPU s, which a set per mode paid
    again for nothing its figures show (they count from each mode's own trigger)."""
    home = Path(os.environ["AIRFLOW_HOME"])
    sources = []
    for mode in modes:
        source = home / "dag-source" / ("bench_wait_%s.py" % mode)
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_text(DAG_FILE % {"mode": mode, "tasks": TASKS, "deferrable": mode == "deferrable", "hold": HOLD_S})
        sources.append(source)
    env = prepare_home(home, sources, url)
    with Components(home, env, parallelism=TASKS) as airflow, Client(url) as client:
        rows = [run_mode(home, mode, airflow, client) for mode in modes]
    print(json.dumps(rows))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
