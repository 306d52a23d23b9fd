"""The synchronous client: `Client(url, api_key=...)`."""
import time
from typing import Any, Dict, Iterator, Mapping, Optional

import httpx

from . import _common as c
from .errors import NotFoundError, SubmissionServiceError, TransportError, WaitTimeout
from .models import Application, ApplicationList, ConfigTemplate, ScheduleRecord


class Client:
    """A client of one service. Retries (transport errors, 502/503/504, 429 with Retry-After) only
    requests that are safe to repeat: GETs, and submissions, which carry an Idempotency-Key."""

    def __init__(self, url: str, api_key: Optional[str] = None, *, timeout: float = 30.0, max_retries: int = 3,
                 transport: Optional[httpx.BaseTransport] = None) -> None:
        self.max_retries = max_retries
        self._http = httpx.Client(base_url=url.rstrip("/"), headers=c.headers_for(api_key), timeout=timeout,
                                  transport=transport)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- plumbing -------------------------------------------------------------------------------

    def _request(self, method: str, path: str, *, retry: bool, **kwargs: Any) -> httpx.Response:
        attempt = 0
        while True:
            try:
                response = self._http.request(method, path, **kwargs)
            except httpx.TransportError as error:
                if not retry or attempt >= self.max_retries:
                    raise TransportError("%s %s: %s" % (method, path, error)) from error
                time.sleep(c.backoff(attempt))
            else:
                status = response.status_code
                if not retry or attempt >= self.max_retries or (status not in c.RETRYABLE_STATUS and status != 429):
                    c.raise_for(response)
                    return response
                time.sleep(c.retry_after(response, attempt))
            attempt += 1

    def _json(self, method: str, path: str, *, retry: bool, **kwargs: Any) -> Any:
        return self._request(method, path, retry=retry, **kwargs).json()

    # -- applications ---------------------------------------------------------------------------

    def submit(self, job_name: str, config_template_name: Optional[str] = None,
               config_overrides: Optional[Mapping[str, Any]] = None, labels: Optional[Mapping[str, str]] = None,
               idempotency_key: Optional[str] = None, dry_run: bool = False) -> Application:
        """Submits an application. Every call carries an Idempotency-Key (a new UUID unless given), so
        a retry after a lost answer returns the application the first attempt made, never a second run."""
        body = c.submission_body(job_name, config_template_name, config_overrides, labels)
        headers = {"idempotency-key": c.idempotency_header(idempotency_key or c.new_idempotency_key())}
        params = {"dryRun": "true"} if dry_run else None
        return self._json("POST", "/api/apps/", retry=True, json=body, headers=headers, params=params)

    def get(self, app_name: str) -> Application:
        return self._json("GET", "/api/apps/%s" % app_name, retry=True)

    def list_page(self, job_name: Optional[str] = None, state: Optional[str] = None,
                  label_selector: c.LabelSelector = None, q: Optional[str] = None, page_size: int = 50,
                  cursor: Optional[str] = None, view: str = "full") -> ApplicationList:
        """One page; its `next` is the cursor of the following one (None: the last)."""
        params = c.list_params(job_name, state, label_selector, q, page_size, cursor, view)
        return self._json("GET", "/api/apps/", retry=True, params=params)

    def list(self, job_name: Optional[str] = None, state: Optional[str] = None, label_selector: c.LabelSelector = None,
             q: Optional[str] = None, page_size: int = 50, view: str = "full") -> Iterator[Application]:
        """Every matching application, newest first, reading cursor pages as the iteration goes."""
        cursor: Optional[str] = None
        while True:
            page = self.list_page(job_name, state, label_selector, q, page_size, cursor, view)
            yield from page["items"]
            cursor = page["next"]
            if not cursor:
                return

    def stop(self, app_name: str) -> Application:
        return self._json("POST", "/api/apps/%s/stop" % app_name, retry=False)

    def delete(self, app_name: str) -> None:
        self._request("DELETE", "/api/apps/%s" % app_name, retry=False)

    def submission(self, app_name: str) -> Dict[str, Any]:
        return self._json("GET", "/api/apps/%s/submission" % app_name, retry=True)

    # -- logs and events ------------------------------------------------------------------------

    def logs(self, app_name: str, follow: bool = False, offset: int = 0, container: str = "driver") -> Iterator[str]:
        """The driver log as text chunks. With follow, until the application ends; a broken connection
        is resumed at the next byte (offset), up to max_retries times in a row."""
        decoder = c.LogDecoder(offset)
        failures = 0
        while True:
            params = {"follow": "true" if follow else "false", "offset": decoder.offset, "container": container}
            try:
                with self._http.stream("GET", "/api/apps/%s/log" % app_name, params=params,
                                       timeout=httpx.Timeout(10.0, read=None)) as response:
                    if response.status_code >= 400:
                        response.read()
                        c.raise_for(response)
                    for chunk in response.iter_bytes():
                        failures = 0
                        text = decoder.decode(chunk)
                        if text:
                            yield text
                tail = decoder.flush()
                if tail:
                    yield tail
                return
            except httpx.TransportError as error:
                failures += 1
                if failures > self.max_retries:
                    raise TransportError("log of %s: %s" % (app_name, error)) from error
                time.sleep(c.backoff(failures - 1))

    def events(self, job_name: Optional[str] = None, label_selector: c.LabelSelector = None, q: Optional[str] = None,
               last_event_id: Optional[str] = None, read_timeout: float = 60.0,
               max_reconnects: Optional[int] = None) -> Iterator[c.Event]:
        """Server-sent events of application changes (ready, changed, deleted, reset). A broken
        connection is reopened with Last-Event-ID, so nothing is missed; `reset` says the service no
        longer held the position: re-read what you track. (max_reconnects: in a row; default max_retries.)"""
        reconnects = self.max_retries if max_reconnects is None else max_reconnects
        failures = 0
        while True:
            headers = {"accept": "text/event-stream"}
            if last_event_id is not None:
                headers["last-event-id"] = last_event_id
            try:
                with self._http.stream("GET", "/api/apps/events", params=c.event_params(job_name, label_selector, q),
                                       headers=headers, timeout=httpx.Timeout(10.0, read=read_timeout)) as response:
                    if response.status_code >= 400:
                        response.read()
                        c.raise_for(response)
                    parser = c.SseParser()
                    for line in response.iter_lines():
                        event = parser.feed(line)
                        if event is None:
                            continue
                        failures = 0
                        if event.id is not None:
                            last_event_id = event.id
                        yield event
            except httpx.TransportError as error:
                failures += 1
                if failures > reconnects:
                    raise TransportError("events: %s" % error) from error
                time.sleep(c.backoff(failures - 1))

    def wait(self, app_name: str, timeout: Optional[float] = None) -> Application:
        """Follows the events stream (no polling) until the application is in an end state; returns it.
        Raises WaitTimeout after `timeout` seconds, NotFoundError when it is deleted meanwhile."""
        deadline = None if timeout is None else time.monotonic() + timeout
        failures = 0
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise WaitTimeout("%s did not end within %s s" % (app_name, timeout))
            try:
                return self._wait_once(app_name, left)
            except TransportError as error:
                # A read timeout is the wait's own clock (or a stalled stream): look again, fresh.
                if isinstance(error.__cause__, httpx.ReadTimeout):
                    continue
                failures += 1
                if failures > self.max_retries:
                    raise
                time.sleep(c.backoff(failures - 1))

    def _wait_once(self, app_name: str, left: Optional[float]) -> Application:
        read_timeout = c.read_timeout_for(left)
        for event in self.events(q=app_name, read_timeout=read_timeout, max_reconnects=0):
            if event.type in ("ready", "reset"):
                current = self.get(app_name)  # what happened before the stream (or while it was not held)
                if c.ended(current):
                    return current
            elif event.data.get("appName") == app_name:
                if event.type == "deleted":
                    raise NotFoundError(404, {"message": "application %s was deleted while waiting" % app_name})
                if c.ended(event.data):
                    return event.data  # type: ignore[return-value]
        raise SubmissionServiceError("the events stream ended")

    # -- config templates -----------------------------------------------------------------------

    def templates(self) -> Iterator[ConfigTemplate]:
        yield from self._json("GET", "/api/config-templates/", retry=True)["items"]

    def get_template(self, name: str) -> ConfigTemplate:
        return self._json("GET", "/api/config-templates/%s" % name, retry=True)

    def create_template(self, name: str, config: Mapping[str, Any], **extra: Any) -> ConfigTemplate:
        return self._json("POST", "/api/config-templates/", retry=False, json={"name": name, "config": dict(config), **extra})

    def replace_template(self, name: str, config: Mapping[str, Any], **extra: Any) -> ConfigTemplate:
        return self._json("PUT", "/api/config-templates/%s" % name, retry=False, json={"name": name, "config": dict(config), **extra})

    def delete_template(self, name: str) -> None:
        self._request("DELETE", "/api/config-templates/%s" % name, retry=False)

    # -- schedules ------------------------------------------------------------------------------

    def create_schedule(self, name: str, schedule: str, job_name: str,
                        config_overrides: Optional[Mapping[str, Any]] = None, labels: Optional[Mapping[str, str]] = None,
                        **options: Any) -> ScheduleRecord:
        """Submits `job_name` at each tick of the cron `schedule`. Options (None: the service's default):
        time_zone, config_template_name, concurrency_policy ("Allow", "Forbid", "Replace"), suspend,
        starting_deadline_seconds, successful_runs_history_limit, failed_runs_history_limit.
        Not retried (a POST without an Idempotency-Key); a name in use raises ConflictError."""
        body = c.schedule_body(name, schedule, job_name, config_overrides, labels, options)
        return self._json("POST", "/api/schedules/", retry=False, json=body)

    def list_schedules(self) -> Iterator[ScheduleRecord]:
        """The schedules this key may see (a user key: its own; an admin key: all); one answer, no pages."""
        yield from self._json("GET", "/api/schedules/", retry=True)["items"]

    def get_schedule(self, name: str) -> ScheduleRecord:
        return self._json("GET", c.schedule_path(name), retry=True)

    def update_schedule(self, name: str, schedule: str, job_name: str,
                        config_overrides: Optional[Mapping[str, Any]] = None, labels: Optional[Mapping[str, str]] = None,
                        **options: Any) -> ScheduleRecord:
        """Replaces the schedule's spec (what is not given takes the default, as on create); its owner,
        creation time and record of past ticks stay. Same options as create_schedule."""
        body = c.schedule_body(name, schedule, job_name, config_overrides, labels, options)
        return self._json("PUT", c.schedule_path(name), retry=False, json=body)

    def pause_schedule(self, name: str) -> ScheduleRecord:
        """suspend: true; no tick makes a run until resume_schedule."""
        return self._json("POST", c.schedule_path(name, "pause"), retry=False)

    def resume_schedule(self, name: str) -> ScheduleRecord:
        """suspend: false; of the ticks missed meanwhile at most the latest runs (startingDeadlineSeconds)."""
        return self._json("POST", c.schedule_path(name, "resume"), retry=False)

    def delete_schedule(self, name: str) -> None:
        """Deletes the schedule; its runs stay, as applications."""
        self._request("DELETE", c.schedule_path(name), retry=False)
