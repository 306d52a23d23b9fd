"""Pytest fixtures for a suite run against the live service, shared by the client's tests (its
conftest.py) and the Airflow provider's (clients/airflow/tests/conftest.py loads this module as a
plugin): SUBMISSION_SERVICE_URL (test/clients/*.test.ts start one in local mode), the optional
SUBMISSION_SERVICE_API_KEY, and the repository's examples/ (SUBMISSION_SERVICE_EXAMPLES, else this
checkout's)."""
import os
import uuid
from pathlib import Path
from typing import Any, Callable, Dict, Iterator

import pytest

from submission_service import Client

EXAMPLES = Path(os.environ.get("SUBMISSION_SERVICE_EXAMPLES") or Path(__file__).resolve().parents[3] / "examples").resolve()


def service_url(variable: str, missing: str, refuse: Callable[[str], Any] = pytest.skip) -> str:
    """A service's URL from the environment; without it the test is refused (`refuse`: skipped, or failed) saying why."""
    value = os.environ.get(variable)
    if not value:
        refuse("%s is not set: %s" % (variable, missing))
    return str(value)


@pytest.fixture(scope="session")
def url() -> str:
    return service_url("SUBMISSION_SERVICE_URL", "these tests need a running service")


@pytest.fixture(scope="session")
def pi_overrides() -> Dict[str, Any]:
    """examples/pi.py, small: one executor core, 2 partitions."""
    return {"type": "Python", "mainApplicationFile": "local://%s" % (EXAMPLES / "pi.py"), "arguments": ["2"],
            "executor": {"cores": 1, "instances": 1}}


@pytest.fixture()
def client(url: str) -> Iterator[Client]:
    with Client(url, api_key=os.environ.get("SUBMISSION_SERVICE_API_KEY")) as c:
        yield c


@pytest.fixture()
def job() -> str:
    """A job name of this test's own (filters see only its applications)."""
    return "t-" + uuid.uuid4().hex[:8]
