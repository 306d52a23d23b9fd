"""Airflow's own long-running processes, as `airflow standalone` starts them, for a test or a bench
that runs DAGs the way a deployment does (tests/test_scheduler.py, bench/airflow/scheduled.py)."""
import base64
import importlib.metadata
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import IO, Any, Callable, Dict, Iterable, List, Optional

AIRFLOW = str(Path(sys.executable).parent / "airflow")


def prepare_home(home: Path, dag_files: Iterable[Path], service_url: str) -> Dict[str, str]:
    """An Airflow home: a DAGs folder linking dag_files, a migrated SQLite database (a copy of
    migrated_template()), and the connection submission_service_default from the environment (as a
    deployment would set it).
    Answers the environment every Airflow command of this home runs with."""
    dags = home / "dags"
    dags.mkdir(parents=True)
    for dag_file in dag_files:
        (dags / dag_file.name).symlink_to(dag_file)
    env = {**os.environ, "AIRFLOW_HOME": str(home), "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
           "AIRFLOW__CORE__LOAD_EXAMPLES": "False", "AIRFLOW__LOGGING__COLORED_CONSOLE_LOG": "False",
           "AIRFLOW_CONN_SUBMISSION_SERVICE_DEFAULT": json.dumps({"conn_type": "submission_service", "host": service_url}),
           # The home's SQLite file (Airflow's default), with a longer wait for its write lock: at
           # SQLite's default 5 s, a clear through the REST API failed with "Database error" (500)
           # beside a busy scheduler on a loaded machine. A real deployment has its own database.
           "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": "sqlite:///%s?timeout=60" % (home / "airflow.db")}
    shutil.copyfile(migrated_template(env), home / "airflow.db")
    write_config(home)
    return env


def write_config(home: Path) -> None:
    """The home's airflow.cfg: only the secrets every process of the home must share (connections'
    and triggers' Fernet key, the api-server's secret key, the JWT secret of the tokens the scheduler
    gives a task and the api-server checks); the rest is Airflow's defaults. An Airflow process that
    finds no airflow.cfg draws these at random and writes its own file: `airflow db migrate` was
    the first and only writer; without it, the four components started at once each drew their own,
    and a task's token was "Invalid auth token" to the api-server."""
    key = lambda size: base64.urlsafe_b64encode(os.urandom(size)).decode()  # noqa: E731
    (home / "airflow.cfg").write_text("[core]\nfernet_key = %s\n\n[api]\nsecret_key = %s\n\n[api_auth]\njwt_secret = %s\n"
                                      % (key(32), key(16), key(16)))


def migrated_template(env: Dict[str, str]) -> Path:
    """A freshly migrated SQLite metadata database of this Airflow version, made once and kept in the
    project's cache folder (scripts/setup.sh's SUBMISSION_SERVICE_CACHE): `airflow db migrate` of an
    empty file, ~5 CPU s and a minute of a loaded machine's wall time, gives every home the same
    file (the schema, the default pool, the log templates; nothing of the home), so a copy of it
    is that migration. Made in a scratch home of its own and moved into place whole, so two test
    files starting at once each find either no template or a complete one."""
    cache = Path(os.environ.get("SUBMISSION_SERVICE_CACHE") or Path.home() / ".cache" / "submission-service")
    template = cache / "airflow-db" / ("airflow-%s.db" % importlib.metadata.version("apache-airflow-core"))
    if template.exists():
        return template
    template.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=template.parent) as scratch:
        scratch_db = "sqlite:///%s" % (Path(scratch) / "airflow.db")
        migrated = subprocess.run([AIRFLOW, "db", "migrate"], env={**env, "AIRFLOW_HOME": scratch, "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": scratch_db},
                                  capture_output=True, text=True, timeout=600)
        assert migrated.returncode == 0, migrated.stdout + migrated.stderr
        os.replace(Path(scratch) / "airflow.db", template)
    return template


def query(home: Path, sql: str, *args: Any) -> List[Any]:
    """Rows of the home's metadata database, read beside a running scheduler (waits out its writes)."""
    with sqlite3.connect(home / "airflow.db", timeout=60) as db:
        return db.execute(sql, args).fetchall()


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


def ended_log(airflow: Any, dag_id: str, run_id: str, attempt: int, last_line: str, components: "Components") -> str:
    """The attempt's log (task "pi") once it holds its last line. The task's state (and so the DAG
    run's end) reaches the database before its supervisor has surely written the task's last log
    lines, which come on another socket: once, in CI, the log was read without the driver's lines."""
    def ended() -> str:
        log = airflow.task_log(dag_id, run_id, "pi", attempt)
        return log if last_line in log else ""
    try:
        return wait_for("attempt %d's log to end" % attempt, ended, components, timeout=120)
    except AssertionError as waited:
        raise AssertionError("%s\n%s" % (waited, airflow.task_log(dag_id, run_id, "pi", attempt)[-4000:])) from None

class Components:
    """Airflow's long-running processes as `airflow standalone` starts them (api-server, scheduler,
    dag-processor, triggerer; LocalExecutor, SQLite), each in its own process group."""

    NAMES = ("api-server", "scheduler", "dag-processor", "triggerer")

    def __init__(self, home: Path, env: Dict[str, str], parallelism: int = 4, heartbeat_timeout_s: Optional[int] = None) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.home = home
        self.api = "http://127.0.0.1:%d" % port
        self.health = self.api + "/api/v2/monitor/health"
        self.env = {**env, "AIRFLOW__CORE__EXECUTOR": "LocalExecutor", "AIRFLOW__CORE__PARALLELISM": str(parallelism),
                    "AIRFLOW__API__HOST": "127.0.0.1", "AIRFLOW__API__PORT": str(port), "AIRFLOW__API__WORKERS": "1",
                    "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": "http://127.0.0.1:%d/execution/" % port,
                    "AIRFLOW__CORE__AUTH_MANAGER": "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager",
                    "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
                    "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
                    # The DAG files do not change while these run: parsed once at start (a file whose
                    # mtime changes is parsed again at once anyway), not again every 30 s, each parse
                    # a forked process importing the DAG and the provider for nothing.
                    "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "3600",
                    # A worker's calls to the api-server (its task's start first) time out after 5 s
                    # and are tried 5 times by default; in a hog run the one api-server worker, on
                    # SQLite beside 8 starting tasks and the scheduler, answered none in time, and
                    # the tasks failed while still queued. Airflow's own advice under load: a longer
                    # timeout. A real deployment's values are its own; these only bear the load.
                    "AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT": "60",
                    "AIRFLOW__WORKERS__EXECUTION_API_RETRIES": "10"}
        if heartbeat_timeout_s is not None:
            # A worker that died with its supervisor is found by its task's missing heartbeats (the
            # supervisor sends one every few seconds); Airflow's default waits 300 s for them.
            self.env.update({"AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": str(heartbeat_timeout_s),
                             "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT_DETECTION_INTERVAL": "5"})
        self.processes: Dict[str, subprocess.Popen] = {}
        self.outputs: List[IO[bytes]] = []

    def start(self) -> None:
        for name in self.NAMES:
            out = open(self.home / ("%s.log" % name), "wb")
            self.outputs.append(out)
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

    def trigger(self, dag_id: str, run_id: Optional[str], conf: Dict[str, Any]) -> Dict[str, Any]:
        """A manual DAG run, created through the api-server's REST API as a deployment's users do: the
        `airflow dags trigger` CLI would import all of Airflow again, a few CPU seconds, per run."""
        return self._post("/api/v2/dags/%s/dagRuns" % dag_id, {"dag_run_id": run_id, "logical_date": None, "conf": conf})

    def clear(self, dag_id: str, run_id: str, task_ids: List[str]) -> Dict[str, Any]:
        """Clears the run's tasks whatever their state, as the UI's Clear button does (the API's
        defaults are a dry run of failed tasks only)."""
        return self._post("/api/v2/dags/%s/clearTaskInstances" % dag_id, {
            "dag_run_id": run_id, "task_ids": task_ids, "dry_run": False, "only_failed": False})

    def _post(self, path: str, body: Dict[str, Any]) -> Dict[str, Any]:
        with urllib.request.urlopen(self.api + "/auth/token", timeout=60) as answer:
            token = json.load(answer)["access_token"]
        request = urllib.request.Request(self.api + path, data=json.dumps(body).encode(), method="POST", headers={
            "Authorization": "Bearer " + token, "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=120) as answer:
                return json.load(answer)
        except urllib.error.HTTPError as refused:
            raise AssertionError("POST %s: %s %s" % (path, refused.code, refused.read()[-2000:])) from None

    def check_alive(self) -> None:
        for name, process in self.processes.items():
            if process.poll() is not None:
                raise AssertionError("airflow %s exited with %s%s" % (name, process.returncode, self.tails()))

    def tails(self) -> str:
        return "".join("\n--- %s ---\n%s" % (name, (self.home / ("%s.log" % name)).read_text(errors="replace")[-3000:])
                       for name in self.NAMES if (self.home / ("%s.log" % name)).exists())

    def __enter__(self) -> "Components":
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

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
        for out in self.outputs:
            out.close()
