"""Real Airflow (this virtualenv's) against the live service: SUBMISSION_SERVICE_URL (the repository's
test/clients/airflow.test.ts starts one in local mode). The service's fixtures (url, client, job,
pi_overrides) are the Python client's (clients/python/tests/live_service.py). An Airflow home of its
own per session: a DAGs folder with examples/airflow/spark_pi.py and tests/dags/, a migrated SQLite
database, and the connection submission_service_default (from the environment, as a deployment
would set it)."""
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent.parent
AIRFLOW = str(Path(sys.executable).parent / "airflow")

sys.path.insert(0, str(REPO / "clients" / "python" / "tests"))
pytest_plugins = ["live_service"]


@pytest.fixture(scope="session", autouse=True)
def connection_env(url: str) -> None:
    """The connection, for the in-process tests too (hooks read it from the environment)."""
    os.environ["AIRFLOW_CONN_SUBMISSION_SERVICE_DEFAULT"] = json.dumps({"conn_type": "submission_service", "host": url})


class Airflow:
    def __init__(self, home: Path, env: Dict[str, str]) -> None:
        self.home = home
        self.env = env

    def run(self, *args: str, timeout: float = 1200) -> subprocess.CompletedProcess:
        return subprocess.run([AIRFLOW, *args], env=self.env, capture_output=True, text=True, timeout=timeout)

    def dags_test(self, dag_id: str, logical_date: str, conf: Optional[Dict[str, Any]] = None) -> subprocess.CompletedProcess:
        return self.run("dags", "test", dag_id, logical_date, *(["-c", json.dumps(conf)] if conf else []))

    def xcom(self, dag_id: str, key: str) -> Any:
        """The latest value under `key` of the DAG's latest run (read from the metadata database)."""
        with sqlite3.connect(self.home / "airflow.db") as db:
            row = db.execute("select x.value from xcom x join dag_run r on r.id = x.dag_run_id where x.dag_id = ? "
                             "and x.key = ? order by r.id desc, x.timestamp desc limit 1", (dag_id, key)).fetchone()
        return json.loads(row[0]) if row else None

    def query(self, sql: str, *args: Any) -> List[Any]:
        """Rows of the metadata database (read beside a running scheduler: waits out its writes)."""
        with sqlite3.connect(self.home / "airflow.db", timeout=60) as db:
            return db.execute(sql, args).fetchall()

    def task_log(self, dag_id: str, run_id: str, task_id: str, attempt: int) -> str:
        path = self.home / "logs" / ("dag_id=%s" % dag_id) / ("run_id=%s" % run_id) / ("task_id=%s" % task_id) / ("attempt=%d.log" % attempt)
        return path.read_text(errors="replace") if path.exists() else ""

    def task_states(self, dag_id: str) -> List[str]:
        with sqlite3.connect(self.home / "airflow.db") as db:
            return [r[0] for r in db.execute("select t.state from task_instance t join dag_run r on r.dag_id = t.dag_id "
                                             "and r.run_id = t.run_id where t.dag_id = ? "
                                             "and r.id = (select max(id) from dag_run where dag_id = ?)", (dag_id, dag_id))]


@pytest.fixture(scope="session")
def airflow(tmp_path_factory: pytest.TempPathFactory, url: str) -> Airflow:
    home = tmp_path_factory.mktemp("airflow-home")
    dags = home / "dags"
    dags.mkdir()
    (dags / "spark_pi.py").symlink_to(REPO / "examples" / "airflow" / "spark_pi.py")
    for dag_file in (HERE / "dags").glob("*.py"):
        (dags / dag_file.name).symlink_to(dag_file)
    env = {**os.environ, "AIRFLOW_HOME": str(home), "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
           "AIRFLOW__CORE__LOAD_EXAMPLES": "False", "AIRFLOW__LOGGING__COLORED_CONSOLE_LOG": "False",
           "AIRFLOW_CONN_SUBMISSION_SERVICE_DEFAULT": json.dumps({"conn_type": "submission_service", "host": url})}
    migrated = subprocess.run([AIRFLOW, "db", "migrate"], env=env, capture_output=True, text=True, timeout=600)
    assert migrated.returncode == 0, migrated.stdout + migrated.stderr
    return Airflow(home, env)


def wait_for(what: str, probe: Callable[[], Any], components: Optional["Components"] = None, timeout: float = 900) -> Any:
    """probe()'s first truthy answer, asked every half second: a wait for a state, bounded only so a
    stuck run ends (the deadline is no assertion of speed). Fails early when a component died."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if components is not None:
            components.check_alive()
        if time.monotonic() > deadline:
            raise AssertionError("waited %d s for %s%s" % (timeout, what, components.tails() if components else ""))
        time.sleep(0.5)


class Components:
    """Airflow's long-running processes as `airflow standalone` starts them (api-server, scheduler,
    dag-processor, triggerer; LocalExecutor, SQLite), each in its own process group."""

    NAMES = ("api-server", "scheduler", "dag-processor", "triggerer")

    def __init__(self, airflow: Airflow, port: int) -> None:
        self.airflow = airflow
        self.health = "http://127.0.0.1:%d/api/v2/monitor/health" % port
        self.env = {**airflow.env, "AIRFLOW__CORE__EXECUTOR": "LocalExecutor", "AIRFLOW__CORE__PARALLELISM": "4",
                    "AIRFLOW__API__HOST": "127.0.0.1", "AIRFLOW__API__PORT": str(port), "AIRFLOW__API__WORKERS": "1",
                    "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": "http://127.0.0.1:%d/execution/" % port,
                    "AIRFLOW__CORE__AUTH_MANAGER": "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager",
                    "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
                    "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False"}
        self.processes: Dict[str, subprocess.Popen] = {}

    def start(self) -> None:
        for name in self.NAMES:
            out = open(self.airflow.home / ("%s.log" % name), "wb")
            self.processes[name] = subprocess.Popen([AIRFLOW, name], env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                                    start_new_session=True)
        wait_for("every component to report healthy", self.healthy, self)

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(self.health, timeout=10) as answer:
                status = json.load(answer)
        except OSError:
            return False
        parts = {name: part for name, part in status.items() if isinstance(part, dict)}
        return {"scheduler", "triggerer"} <= set(parts) and all(part.get("status") == "healthy" for part in parts.values())

    def check_alive(self) -> None:
        for name, process in self.processes.items():
            if process.poll() is not None:
                raise AssertionError("airflow %s exited with %s%s" % (name, process.returncode, self.tails()))

    def tails(self) -> str:
        return "".join("\n--- %s ---\n%s" % (name, (self.airflow.home / ("%s.log" % name)).read_text(errors="replace")[-3000:])
                       for name in self.NAMES if (self.airflow.home / ("%s.log" % name)).exists())

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(timeout=120)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


@pytest.fixture()
def components(airflow: Airflow) -> Iterator[Components]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    running = Components(airflow, port)
    try:
        running.start()
        yield running
    finally:
        running.stop()
