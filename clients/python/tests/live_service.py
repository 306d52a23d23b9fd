"""Pytest fixtures for a suite run against the live service, shared by the client's tests (its
conftest.py) and the Airflow provider's (clients/airflow/tests/conftest.py loads this module as a
plugin): SUBMISSION_SERVICE_URL (test/clients/*.test.ts start one in local mode), the optional
SUBMISSION_SERVICE_API_KEY, and the repository's examples/ (SUBMISSION_SERVICE_EXAMPLES, else this
checkout's)."""
import os
import uuid
from pathlib import Path
from typing import Any, Dict, Iterator

import pytest

from submission_service import Client

EXAMPLES = Path(os.environ.get("SUBMISSION_SERVICE_EXAMPLES") or Path(__file__).resolve().parents[3] / "examples").resolve()


@pytest.fixture(scope="session")
def url() -> str:
    value = os.environ.get("SUBMISSION_SERVICE_URL")
    if not value:
        pytest.skip("SUBMISSION_SERVICE_URL is not set: these tests need a running service")
    return value


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
