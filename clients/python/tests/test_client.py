"""The client against the live service (local mode): no mocks."""
import threading
import uuid

import pytest

from submission_service import (AsyncClient, Client, IdempotencyKeyReusedError, NotFoundError, TransportError,
                                UnschedulableError, ValidationError)
from transports import CountRequests, CutEventsOnce, CutLogOnce, LoseFirstAnswer, LoseStopAnswer


def test_submit_and_wait_follow_pi_to_completed_with_its_log(client, job, pi_overrides):
    app = client.submit(job_name=job, config_overrides=pi_overrides, labels={"suite": "python"})
    assert app["jobName"] == job and app["labels"] == {"suite": "python"}
    chunks = []
    # The log followed from the start while it runs (a thread), the end awaited on the events stream.
    follower = threading.Thread(target=lambda: chunks.extend(client.logs(app["appName"], follow=True)))
    follower.start()
    counting = CountRequests()
    with Client(str(client._http.base_url), transport=counting) as waiter:
        done = waiter.wait(app["appName"], timeout=900)
    # No polling: the application is read once per events stream opened (at its `ready`), not again.
    streams, reads = counting.paths.count("/api/apps/events"), counting.paths.count("/api/apps/%s" % app["appName"])
    assert 1 <= streams <= 3 and reads == streams, counting.paths
    follower.join(timeout=120)
    assert not follower.is_alive(), "a followed log ends when the application ends"
    assert done["state"] == "COMPLETED", done.get("stateDetail")
    text = "".join(chunks)
    assert "Pi is roughly" in text
    # Resumable by offset: the rest of the log from byte N is the log after its first N bytes.
    whole = "".join(client.logs(app["appName"])).encode()
    assert whole == text.encode(), "the followed log is the whole log"
    rest = "".join(client.logs(app["appName"], offset=100)).encode()
    assert rest == whole[100:]
    # A connection broken mid-log is resumed at the next byte.
    transport = CutLogOnce()
    with Client(str(client._http.base_url), transport=transport) as cut:
        assert "".join(cut.logs(app["appName"])).encode() == whole
    assert transport.requests == 2, "read again from the offset it reached"


async def test_async_client_submits_waits_and_follows(url, job, pi_overrides):
    import asyncio
    async with AsyncClient(url) as ac:
        app = await ac.submit(job_name=job, config_overrides=pi_overrides)

        async def follow():
            return "".join([chunk async for chunk in ac.logs(app["appName"], follow=True)])

        done, log = await asyncio.gather(ac.wait(app["appName"], timeout=900), follow())
        assert done["state"] == "COMPLETED", done.get("stateDetail")
        assert "Pi is roughly" in log
        listed = [a async for a in ac.list(job_name=job)]
        assert [a["appName"] for a in listed] == [app["appName"]]


def test_unschedulable_answers_422_with_the_pools(client, job, pi_overrides):
    with pytest.raises(UnschedulableError) as raised:
        client.submit(job_name=job, config_overrides={**pi_overrides, "executor": {"cores": 64}})
    error = raised.value
    assert error.status == 422
    assert error.advice
    assert {p["instanceName"] for p in error.pools} >= {"n1-standard-8"}


def test_bad_input_answers_400_with_the_field(client, job):
    with pytest.raises(ValidationError) as raised:
        client.submit(job_name=job, config_overrides={"executor": {"cores": "many"}})
    assert raised.value.status == 400
    assert raised.value.field == "configOverrides.executor.cores"
    assert "cores" in raised.value.body["message"]
    with pytest.raises(NotFoundError):
        client.get("no-such-app-20260101-000000-aaaaa")


def test_same_idempotency_key_answers_the_same_application(client, job, pi_overrides):
    key = str(uuid.uuid4())
    first = client.submit(job_name=job, config_overrides=pi_overrides, idempotency_key=key)
    try:
        again = client.submit(job_name=job, config_overrides=pi_overrides, idempotency_key=key)
        assert again["appName"] == first["appName"]
        with pytest.raises(IdempotencyKeyReusedError) as raised:
            client.submit(job_name=job, config_overrides={**pi_overrides, "arguments": ["3"]}, idempotency_key=key)
        assert raised.value.status == 422 and raised.value.code == "IDEMPOTENCY_KEY_REUSED"
        assert [a["appName"] for a in client.list(job_name=job)] == [first["appName"]]
    finally:
        client.stop(first["appName"])


def test_a_submission_whose_answer_was_lost_is_retried_into_the_same_application(url, job, pi_overrides):
    transport = LoseFirstAnswer()
    with Client(url, transport=transport) as flaky:
        app = flaky.submit(job_name=job, config_overrides=pi_overrides)  # a generated key, retried
        assert transport.lost == 1
        try:
            assert [a["appName"] for a in flaky.list(job_name=job)] == [app["appName"]], "one application, not two"
        finally:
            flaky.stop(app["appName"])


def test_events_resume_after_a_position(client, job, pi_overrides):
    stream = client.events(job_name=job)
    ready = next(stream)
    assert ready.type == "ready" and ready.id
    stream.close()
    app = client.submit(job_name=job, config_overrides=pi_overrides)
    client.stop(app["appName"])
    # What happened since `ready` arrives on a new connection that names it (Last-Event-ID).
    states = []
    for event in client.events(job_name=job, last_event_id=ready.id):
        if event.type == "changed" and event.data["appName"] == app["appName"]:
            states.append(event.data["state"])
            if event.data["state"] == "KILLED":
                break
    assert states[0] == "PENDING" and states[-1] == "KILLED"
    assert client.wait(app["appName"], timeout=60)["state"] == "KILLED", "wait answers at once for an ended one"


def test_list_pages_through_cursors_with_filters(client, job, pi_overrides):
    names = []
    for i in range(3):
        app = client.submit(job_name=job, config_overrides=pi_overrides, labels={"n": str(i)})
        client.stop(app["appName"])
        names.append(app["appName"])
    listed = [a["appName"] for a in client.list(job_name=job, page_size=1)]
    assert sorted(listed) == sorted(names) and len(listed) == 3
    assert [a["appName"] for a in client.list(job_name=job, label_selector={"n": "1"})] == [names[1]]
    assert [a["appName"] for a in client.list(job_name=job, state="KILLED", page_size=2, view="summary")] == listed
    client.delete(names[0])
    with pytest.raises(NotFoundError):
        client.get(names[0])


def test_templates_crud(client, job, pi_overrides):
    name = "tpl-" + job
    created = client.create_template(name, {"type": "Python", "executor": {"cores": 1}})
    assert created["name"] == name
    assert client.get_template(name)["config"]["executor"]["cores"] == 1
    # A submission names the template; a dry run answers the merged config and makes nothing.
    dry = client.submit(job_name=job, config_template_name=name, dry_run=True,
                        config_overrides={"mainApplicationFile": pi_overrides["mainApplicationFile"]})
    assert dry["configTemplateName"] == name and dry["config"]["executor"]["cores"] == 1
    assert list(client.list(job_name=job)) == [], "a dry run makes no application"
    client.replace_template(name, {"type": "Python", "executor": {"cores": 2}})
    assert client.get_template(name)["config"]["executor"]["cores"] == 2
    assert name in [t["name"] for t in client.templates()]
    client.delete_template(name)
    with pytest.raises(NotFoundError):
        client.get_template(name)


def test_events_reconnect_with_last_event_id_after_a_broken_connection(url, job, pi_overrides):
    transport = CutEventsOnce()
    with Client(url, transport=transport) as cut, Client(url) as client:
        stream = cut.events(job_name=job)
        assert next(stream).type == "ready"
        app = client.submit(job_name=job, config_overrides=pi_overrides)
        client.stop(app["appName"])
        seen = []
        for event in stream:
            assert event.type != "reset", "a resumed position is held: no reset"
            if event.type == "changed":
                seen.append((event.id, event.data["state"]))
                if event.data["state"] == "KILLED":
                    break
        stream.close()
    # Cut only after a chunk was read on: KILLED came over the connection resumed with Last-Event-ID.
    assert transport.cut, "the stream was broken once"
    ids = [i for i, _ in seen]
    assert len(set(ids)) == len(ids), "nothing twice"
    assert seen[0][1] == "PENDING" and seen[-1][1] == "KILLED", "nothing missed from the first state to the last"


def test_events_from_an_unknown_position_answer_reset(client):
    stream = client.events(last_event_id="00000000.1")
    first, second = next(stream), next(stream)
    stream.close()
    assert [first.type, second.type] == ["ready", "reset"]
    assert second.id


def test_a_stop_whose_answer_was_lost_is_not_retried(url, job, pi_overrides):
    # Not safe to repeat blindly (it carries no key): the caller is told, once, and decides.
    transport = LoseStopAnswer()
    with Client(url, transport=transport, max_retries=3) as flaky:
        app = flaky.submit(job_name=job, config_overrides=pi_overrides)
        with pytest.raises(TransportError):
            flaky.stop(app["appName"])
        assert transport.stops == 1, "sent once, not retried"
        assert flaky.wait(app["appName"], timeout=300)["state"] == "KILLED", "the one stop was done"


async def test_async_client_errors_carry_the_json_and_events_resume(url, job, pi_overrides):
    key = str(uuid.uuid4())
    async with AsyncClient(url) as ac:
        stream = ac.events(job_name=job)
        ready = await stream.__anext__()
        await stream.aclose()
        assert ready.type == "ready" and ready.id
        app = await ac.submit(job_name=job, config_overrides=pi_overrides, idempotency_key=key)
        assert (await ac.submit(job_name=job, config_overrides=pi_overrides, idempotency_key=key))["appName"] == app["appName"]
        with pytest.raises(IdempotencyKeyReusedError) as reused:
            await ac.submit(job_name=job, config_overrides={**pi_overrides, "arguments": ["3"]}, idempotency_key=key)
        assert reused.value.status == 422 and reused.value.body["code"] == "IDEMPOTENCY_KEY_REUSED"
        with pytest.raises(ValidationError) as invalid:
            await ac.submit(job_name=job, config_overrides={"executor": {"cores": "many"}})
        assert invalid.value.field == "configOverrides.executor.cores"
        await ac.stop(app["appName"])
        # From the position before the submission (Last-Event-ID): its whole life, PENDING to KILLED.
        states = []
        resumed = ac.events(job_name=job, last_event_id=ready.id)
        try:
            async for event in resumed:
                assert event.type != "reset"
                if event.type == "changed" and event.data["appName"] == app["appName"]:
                    states.append(event.data["state"])
                    if event.data["state"] == "KILLED":
                        break
        finally:
            await resumed.aclose()
        assert states[0] == "PENDING" and states[-1] == "KILLED"
