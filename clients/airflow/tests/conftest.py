"""Real Airflow (this virtualenv's) against the live service: SUBMISSION_SERVICE_URL (the repository's
test/clients/airflow.test.ts starts one in local mode), and beside it SUBMISSION_SERVICE_FAKE_SPARK_URL,
a service whose drivers are the fake-spark-submit TEST DOUBLE (fake_url), for the tests that check
no Spark work. The service's fixtures (url, client, job, pi_overrides) are the Python client's
(clients/python/tests/live_service.py). An Airflow home of its own per session: a DAGs folder with
examples/airflow/spark_pi.py and tests/dags/, a migrated SQLite database, and the connections
submission_service_default and submission_service_fake (from the environment, as a deployment
would set them)."""
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent.parent

sys.path.insert(0, str(REPO / "clients" / "python" / "tests"))
pytest_plugins = ["live_service"]

from airflow_processes import AIRFLOW, Components, prepare_home, query  # noqa: E402  (tests/, on the path as pytest runs it)
from live_service import service_url  # noqa: E402  (clients/python/tests, on the path above)


@pytest.fixture(scope="session")
def fake_url() -> str:
    """The service whose drivers are all the fake-spark-submit TEST DOUBLE (the connection submission_service_fake)."""
    return service_url("SUBMISSION_SERVICE_FAKE_SPARK_URL", "needs a service whose drivers are the fake-spark-submit TEST DOUBLE", pytest.fail)


def connections(url: str) -> Dict[str, str]:
    """Both services' connections as a deployment's environment gives them."""
    named = {"AIRFLOW_CONN_SUBMISSION_SERVICE_DEFAULT": url, "AIRFLOW_CONN_SUBMISSION_SERVICE_FAKE": os.environ.get("SUBMISSION_SERVICE_FAKE_SPARK_URL")}
    return {name: json.dumps({"conn_type": "submission_service", "host": host}) for name, host in named.items() if host}


@pytest.fixture(scope="session", autouse=True)
def connection_env(url: str) -> None:
    """The connections, for the in-process tests too (hooks read them from the environment)."""
    os.environ.update(connections(url))


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
        rows = self.query("select x.value from xcom x join dag_run r on r.id = x.dag_run_id where x.dag_id = ? "
                          "and x.key = ? order by r.id desc, x.timestamp desc limit 1", dag_id, key)
        return json.loads(rows[0][0]) if rows else None

    def query(self, sql: str, *args: Any) -> List[Any]:
        return query(self.home, sql, *args)

    def task_log(self, dag_id: str, run_id: str, task_id: str, attempt: int) -> str:
        path = self.home / "logs" / ("dag_id=%s" % dag_id) / ("run_id=%s" % run_id) / ("task_id=%s" % task_id) / ("attempt=%d.log" % attempt)
        return path.read_text(errors="replace") if path.exists() else ""

    def task_states(self, dag_id: str) -> List[str]:
        return [r[0] for r in self.query("select t.state from task_instance t join dag_run r on r.dag_id = t.dag_id "
                                         "and r.run_id = t.run_id where t.dag_id = ? "
                                         "and r.id = (select max(id) from dag_run where dag_id = ?)", dag_id, dag_id)]


@pytest.fixture(scope="session")
def airflow(tmp_path_factory: pytest.TempPathFactory, url: str) -> Airflow:
    home = tmp_path_factory.mktemp("airflow-home")
    dag_files = [REPO / "examples" / "airflow" / "spark_pi.py", *(HERE / "dags").glob("*.py")]
    return Airflow(home, {**prepare_home(home, dag_files, url), **connections(url)})


@pytest.fixture(scope="session")
def components(airflow: Airflow) -> Iterator[Components]:
    # test_scheduler.py kills a whole worker: two minutes of missing heartbeats find it (short of
    # Airflow's 300 s, long enough that a busy machine's late heartbeats fail no live task).
    # One set for the session, as a deployment runs them: each start imports Airflow in four
    # processes and boots the api-server, CPU the tests' kills need not pay twice. The kills leave
    # it whole: the LocalExecutor reaps a killed worker and forks a new one, and each test has a DAG
    # run (run_id) and a job of its own. test_quick_apps.py's 8 tasks run in it too, all at once
    # (the race needs them to overlap): a worker slot for each.
    with Components(airflow.home, airflow.env, parallelism=8, heartbeat_timeout_s=120) as running:
        yield running
