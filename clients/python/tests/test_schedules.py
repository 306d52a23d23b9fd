"""Schedules through the client against the live service (local mode: its loop runs in the service)."""
import pytest

from submission_service import AsyncClient, ConflictError, NotFoundError, ValidationError

SCHEDULE_LABEL = "schedule.submission-service.io/name"


def first_run_of(stream, name):
    """The first application of the schedule the events stream shows (no polling)."""
    for event in stream:
        if event.type == "changed" and event.data.get("labels", {}).get(SCHEDULE_LABEL) == name:
            return event.data
    raise AssertionError("the events stream ended before a run of %s" % name)


def test_schedule_lifecycle_create_list_get_pause_update_resume_run_delete(client, job, pi_overrides):
    name = "s-" + job
    created = client.create_schedule(name, "0 3 * * *", job, pi_overrides, labels={"suite": "python"},
                                     time_zone="Europe/Berlin", concurrency_policy="Forbid")
    assert (created["name"], created["jobName"], created["timeZone"]) == (name, job, "Europe/Berlin")
    assert created["labels"] == {"suite": "python"} and created["nextRunAt"], "a live schedule has a next tick"
    assert name in [s["name"] for s in client.list_schedules()]
    assert client.get_schedule(name)["configOverrides"] == pi_overrides

    paused = client.pause_schedule(name)
    assert paused["suspend"] is True and paused["nextRunAt"] is None
    # Every second, still paused: the PUT replaces the whole spec, so suspend is given again.
    updated = client.update_schedule(name, "* * * * * *", job, pi_overrides, labels={"suite": "python", "v": "2"},
                                     concurrency_policy="Forbid", suspend=True)
    assert updated["schedule"] == "* * * * * *" and updated["suspend"] is True
    assert updated["createdAt"] == created["createdAt"], "the creation time stays"
    assert "timeZone" not in updated or updated["timeZone"] == "UTC", "what the PUT left out is the default again"

    stream = client.events(job_name=job)
    assert next(stream).type == "ready"
    try:
        assert client.resume_schedule(name)["suspend"] is False
        run = first_run_of(stream, name)
    finally:
        stream.close()
        client.pause_schedule(name)
    assert run["jobName"] == job and run["labels"]["v"] == "2", "the run is the updated spec's"
    runs = list(client.list(label_selector={SCHEDULE_LABEL: name}))
    assert run["appName"] in [r["appName"] for r in runs]
    for r in runs:
        client.stop(r["appName"])

    client.delete_schedule(name)
    with pytest.raises(NotFoundError):
        client.get_schedule(name)
    assert name not in [s["name"] for s in client.list_schedules()]
    assert client.get(run["appName"])["appName"] == run["appName"], "a deleted schedule's runs stay"


def test_schedule_errors_carry_the_service_json(client, job, pi_overrides):
    with pytest.raises(ValidationError) as raised:
        client.create_schedule("s-" + job, "61 * * * *", job, pi_overrides)
    assert raised.value.status == 400 and raised.value.field == "schedule"
    assert "schedule" in raised.value.body["message"]
    with pytest.raises(TypeError):
        client.create_schedule("s-" + job, "0 3 * * *", job, pi_overrides, timezone="UTC")  # a misspelt option
    client.create_schedule("s-" + job, "0 3 * * *", job, pi_overrides, suspend=True)
    try:
        with pytest.raises(ConflictError):
            client.create_schedule("s-" + job, "0 4 * * *", job, pi_overrides)
    finally:
        client.delete_schedule("s-" + job)
    with pytest.raises(NotFoundError):
        client.pause_schedule("s-" + job)


async def test_async_client_creates_lists_gets_and_deletes_a_schedule(url, job, pi_overrides):
    name = "s-" + job
    async with AsyncClient(url) as ac:
        created = await ac.create_schedule(name, "@daily", job, pi_overrides, suspend=True)
        assert created["name"] == name and created["suspend"] is True
        assert name in [s["name"] async for s in ac.list_schedules()]
        assert (await ac.resume_schedule(name))["nextRunAt"]
        assert (await ac.update_schedule(name, "@weekly", job, pi_overrides, suspend=True))["schedule"] == "@weekly"
        await ac.delete_schedule(name)
        with pytest.raises(NotFoundError):
            await ac.get_schedule(name)
