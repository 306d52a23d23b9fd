"""The trigger, the operator's kill and the idempotency key against the live service (in process).
Against the service whose drivers are the fake-spark-submit TEST DOUBLE (fake_url, the connection
submission_service_fake): what these check is the provider's and the service's own logic, not what
Spark does, and each was a JVM or two of CPU. Real Spark behind the same paths: the trigger's wait
to a Spark application's end in test_dags.py (`airflow dags test` of the example DAG, its trigger in
line) and test_scheduler.py (the triggerer), a real application's stop in the Python client's suite
(clients/python/tests/test_client.py, KILLED)."""
import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict

from submission_service import Client

from submission_service_airflow import keys
from submission_service_airflow.operators import SparkApplicationOperator
from submission_service_airflow.triggers import SparkApplicationTrigger

CONN = "submission_service_fake"


def fake(*directives: str) -> Dict[str, Any]:
    """A run of the TEST DOUBLE, as told: `sleep=S` runs S seconds, `exit=N` ends with code N."""
    return {"type": "Python", "mainApplicationFile": "local:///fake/job.py", "arguments": list(directives),
            "executor": {"cores": 1, "instances": 1}}


def test_fifty_parallel_submissions_with_one_key_make_one_application(fake_url, job):
    key = keys.idempotency_key("parallel", "pi", job, -1, 1)
    start = threading.Barrier(50)
    with Client(fake_url) as client:
        def submit(_: int) -> str:
            start.wait()
            return client.submit(job_name=job, config_overrides=fake("sleep=600"), idempotency_key=key)["appName"]

        with ThreadPoolExecutor(max_workers=50) as pool:
            names = list(pool.map(submit, range(50)))
        assert len(names) == 50 and len(set(names)) == 1, set(names)
        listed = [a["appName"] for a in client.list(job_name=job)]
        assert listed == names[:1], "exactly one application"
        client.stop(names[0])


async def test_the_trigger_serializes_without_the_key_and_fires_once_at_the_end(fake_url, job):
    with Client(fake_url) as client:
        app = client.submit(job_name=job, config_overrides=fake("sleep=2"))
    trigger = SparkApplicationTrigger(app["appName"], CONN)
    classpath, kwargs = trigger.serialize()
    assert classpath == "submission_service_airflow.triggers.SparkApplicationTrigger"
    assert kwargs == {"app_name": app["appName"], "submission_service_conn_id": CONN, "timeout": None,
                      "min_deferral_s": 15.0}
    events = [event async for event in SparkApplicationTrigger(**kwargs).run()]
    assert [e.payload for e in events] == [{"status": "ended", "appName": app["appName"], "state": "COMPLETED",
                                             "stateDetail": events[0].payload["stateDetail"]}]


async def test_a_trigger_that_finds_its_application_ended_fires_no_sooner_than_min_deferral_s(fake_url, job):
    # Against Airflow 3's deferral race (triggers.py): an early end is held, the same event comes after.
    with Client(fake_url) as client:
        app = client.submit(job_name=job, config_overrides=fake("exit=1"))
        ended = client.wait(app["appName"])
    assert ended["state"] in ("FAILED", "COMPLETED", "KILLED"), ended
    started = time.monotonic()
    events = [event.payload async for event in SparkApplicationTrigger(app["appName"], CONN, min_deferral_s=2).run()]
    assert time.monotonic() - started >= 2, "held until min_deferral_s after the trigger started"
    assert events == [{"status": "ended", "appName": app["appName"], "state": ended["state"],
                       "stateDetail": ended.get("stateDetail", "")}]


async def test_triggers_share_one_events_stream_beyond_the_keys_cap_of_streams(fake_url, job):
    # 20 deferred tasks in one triggerer: 20 streams would pass the service's 16 per key (429). The
    # run lasts long enough for all 20 to be waiting on it, as a real pi.py's did.
    with Client(fake_url) as client:
        app = client.submit(job_name=job, config_overrides=fake("sleep=20"))

    async def wait(_: int):
        return [event.payload async for event in SparkApplicationTrigger(app["appName"], CONN).run()]

    results = await asyncio.gather(*(wait(i) for i in range(20)))
    assert [r[0]["status"] for r in results] == ["ended"] * 20, [r for r in results if r[0]["status"] != "ended"][:1]
    assert {r[0]["state"] for r in results} == {"COMPLETED"}


async def test_the_trigger_reports_an_application_it_cannot_follow():
    events = [event async for event in SparkApplicationTrigger("no-such-app-here", timeout=60).run()]
    # wait() reads the application at the stream's start: an unknown one is a 404.
    assert len(events) == 1 and events[0].payload["status"] == "error"
    assert "404" in events[0].payload["message"]


async def test_killing_the_deferred_task_stops_the_application(fake_url, job):
    with Client(fake_url) as client:
        app = client.submit(job_name=job, config_overrides=fake("sleep=600"))
        await SparkApplicationTrigger(app["appName"], CONN).on_kill()
        assert (await asyncio.to_thread(client.wait, app["appName"], 300))["state"] == "KILLED"


def test_killing_the_waiting_worker_stops_the_application(fake_url, job):
    operator = SparkApplicationOperator(task_id="pi", job_name=job, submission_service_conn_id=CONN, config_overrides=fake("sleep=600"))
    with Client(fake_url) as client:
        operator.app_name = client.submit(job_name=job, config_overrides=fake("sleep=600"))["appName"]
        operator.on_kill()
        assert client.wait(operator.app_name, timeout=300)["state"] == "KILLED"
