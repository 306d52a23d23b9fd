"""Real Airflow (this virtualenv's) against the live service: SUBMISSION_SERVICE_URL (the repository's
test/clients/airflow.test.ts starts one in local mode). An Airflow home of its own per session: a
DAGs folder with examples/airflow/spark_pi.py and tests/dags/, a migrated SQLite database, and the
connection submission_service_default (from the environment, as a deployment would set it)."""
import json
import os
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent.parent
AIRFLOW = str(Path(sys.executable).parent / "airflow")


@pytest.fixture(scope="session")
def url() -> str:
    value = os.environ.get("SUBMISSION_SERVICE_URL")
    if not value:
        pytest.skip("SUBMISSION_SERVICE_URL is not set: these tests need a running service")
    return value


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


@pytest.fixture()
def job() -> str:
    return "af-" + uuid.uuid4().hex[:8]


@pytest.fixture(scope="session")
def pi_overrides() -> Dict[str, Any]:
    pi = REPO / "examples" / "pi.py"
    return {"type": "Python", "mainApplicationFile": "local://%s" % pi, "arguments": ["2"],
            "executor": {"cores": 1, "instances": 1}}
