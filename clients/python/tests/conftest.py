"""The live service under test: SUBMISSION_SERVICE_URL (test/clients/python-client.test.ts starts one in
local mode) and the repository's examples/ (SUBMISSION_SERVICE_EXAMPLES)."""
import os
import uuid

import pytest

from submission_service import Client


@pytest.fixture(scope="session")
def url() -> str:
    value = os.environ.get("SUBMISSION_SERVICE_URL")
    if not value:
        pytest.skip("SUBMISSION_SERVICE_URL is not set: these tests need a running service")
    return value


@pytest.fixture(scope="session")
def pi_overrides() -> dict:
    examples = os.environ.get("SUBMISSION_SERVICE_EXAMPLES") or os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples")
    pi = os.path.abspath(os.path.join(examples, "pi.py"))
    return {"type": "Python", "mainApplicationFile": "local://" + pi, "arguments": ["2"], "executor": {"cores": 1, "instances": 1}}


@pytest.fixture()
def client(url: str):
    with Client(url, api_key=os.environ.get("SUBMISSION_SERVICE_API_KEY")) as c:
        yield c


@pytest.fixture()
def job() -> str:
    """A job name of this test's own (filters see only its applications)."""
    return "py-" + uuid.uuid4().hex[:8]
