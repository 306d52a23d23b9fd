"""The trigger, the operator's kill and the idempotency key against the live service (in process)."""
import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from submission_service import Client

from submission_service_airflow import keys
from submission_service_airflow.operators import SparkApplicationOperator
from submission_service_airflow.triggers import SparkApplicationTrigger


def test_fifty_parallel_submissions_with_one_key_make_one_application(url, job, pi_overrides):
    key = keys.idempotency_key("parallel", "pi", job, -1, 1)
    start = threading.Barrier(50)
    with Client(url) as client:
        def submit(_: int) -> str:
            start.wait()
            return client.submit(job_name=job, config_overrides=pi_overrides, idempotency_key=key)["appName"]

        with ThreadPoolExecutor(max_workers=50) as pool:
            names = list(pool.map(submit, range(50)))
        assert len(names) == 50 and len(set(names)) == 1, set(names)
        listed = [a["appName"] for a in client.list(job_name=job)]
        assert listed == names[:1], "exactly one application"
        client.stop(names[0])


async def test_the_trigger_serializes_without_the_key_and_fires_once_at_the_end(url, job, pi_overrides):
    with Client(url) as client:
        app = client.submit(job_name=job, config_overrides=pi_overrides)
    trigger = SparkApplicationTrigger(app["appName"], "submission_service_default")
    classpath, kwargs = trigger.serialize()
    assert classpath == "submission_service_airflow.triggers.SparkApplicationTrigger"
    assert kwargs == {"app_name": app["appName"], "submission_service_conn_id": "submission_service_default", "timeout": None,
                      "min_deferral_s": 15.0}
    events = [event async for event in SparkApplicationTrigger(**kwargs).run()]
    assert [e.payload for e in events] == [{"status": "ended", "appName": app["appName"], "state": "COMPLETED",
                                             "stateDetail": events[0].payload["stateDetail"]}]


async def test_a_trigger_that_finds_its_application_ended_fires_no_sooner_than_min_deferral_s(url, job):
    # Against Airflow 3's deferral race (triggers.py): an early end is held, the same event comes after.
    with Client(url) as client:
        app = client.submit(job_name=job, config_overrides={"type": "Python", "mainApplicationFile": "local:///no/such/file.py"})
        ended = client.wait(app["appName"])
    assert ended["state"] in ("FAILED", "COMPLETED", "KILLED"), ended
    started = time.monotonic()
    events = [event.payload async for event in SparkApplicationTrigger(app["appName"], min_deferral_s=2).run()]
    assert time.monotonic() - started >= 2, "held until min_deferral_s after the trigger started"
    assert events == [{"status": "ended", "appName": app["appName"], "state": ended["state"],
                       "stateDetail": ended.get("stateDetail", "")}]


async def test_triggers_share_one_events_stream_beyond_the_keys_cap_of_streams(url, job, pi_overrides):
    # 20 deferred tasks in one triggerer: 20 streams would pass the service's 16 per key (429).
    with Client(url) as client:
        app = client.submit(job_name=job, config_overrides=pi_overrides)

    async def wait(_: int):
        return [event.payload async for event in SparkApplicationTrigger(app["appName"]).run()]

    results = await asyncio.gather(*(wait(i) for i in range(20)))
    assert [r[0]["status"] for r in results] == ["ended"] * 20, [r for r in results if r[0]["status"] != "ended"][:1]
    assert {r[0]["state"] for r in results} == {"COMPLETED"}


async def test_the_trigger_reports_an_application_it_cannot_follow():
    events = [event async for event in SparkApplicationTrigger("no-such-app-here", timeout=60).run()]
    # wait() reads the application at the stream's start: an unknown one is a 404.
    assert len(events) == 1 and events[0].payload["status"] == "error"
    assert "404" in events[0].payload["message"]


async def test_killing_the_deferred_task_stops_the_application(url, job, pi_overrides):
    with Client(url) as client:
        app = client.submit(job_name=job, config_overrides={**pi_overrides, "arguments": ["400"]})
        await SparkApplicationTrigger(app["appName"]).on_kill()
        assert (await asyncio.to_thread(client.wait, app["appName"], 300))["state"] == "KILLED"


def test_killing_the_waiting_worker_stops_the_application(url, job, pi_overrides):
    operator = SparkApplicationOperator(task_id="pi", job_name=job, config_overrides=pi_overrides)
    with Client(url) as client:
        operator.app_name = client.submit(job_name=job, config_overrides={**pi_overrides, "arguments": ["400"]})["appName"]
        operator.on_kill()
        assert client.wait(operator.app_name, timeout=300)["state"] == "KILLED"
