"""What the sync and async clients share: requests, retry decisions, SSE parsing, log decoding."""
import codecs
import json
import uuid
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Union

import httpx

from .errors import error_for

END_STATES = frozenset({"COMPLETED", "FAILED", "KILLED", "UNKNOWN"})
# Answers after which repeating a safe request may succeed.
RETRYABLE_STATUS = frozenset({502, 503, 504})
USER_AGENT = "submission-service-python/0.1.0"

LabelSelector = Union[str, Mapping[str, str], None]


def headers_for(api_key: Optional[str]) -> Dict[str, str]:
    headers = {"user-agent": USER_AGENT, "accept": "application/json"}
    if api_key:
        headers["x-api-key"] = api_key
    return headers


def new_idempotency_key() -> str:
    return str(uuid.uuid4())


def idempotency_header(key: str) -> str:
    """The key as the header's sf-string (RFC 8941): quoted, with `"` and `\\` escaped."""
    if not key or len(key) > 255 or any(not (0x20 <= ord(c) <= 0x7E) for c in key):
        raise ValueError("an idempotency key is 1 to 255 printable ASCII characters")
    return '"%s"' % key.replace("\\", "\\\\").replace('"', '\\"')


def selector_text(selector: LabelSelector) -> Optional[str]:
    if selector is None or isinstance(selector, str):
        return selector
    return ",".join("%s=%s" % (k, v) for k, v in selector.items())


def list_params(job_name: Optional[str], state: Optional[str], label_selector: LabelSelector, q: Optional[str],
                page_size: int, cursor: Optional[str], view: str) -> Dict[str, Any]:
    params: Dict[str, Any] = {"limit": page_size, "view": view}
    for name, value in (("jobName", job_name), ("state", state), ("labelSelector", selector_text(label_selector)),
                        ("q", q), ("cursor", cursor)):
        if value is not None:
            params[name] = value
    return params


def submission_body(job_name: str, config_template_name: Optional[str], config_overrides: Optional[Mapping[str, Any]],
                    labels: Optional[Mapping[str, str]]) -> Dict[str, Any]:
    body: Dict[str, Any] = {"jobName": job_name}
    if config_template_name:
        body["configTemplateName"] = config_template_name
    if config_overrides is not None:
        body["configOverrides"] = dict(config_overrides)
    if labels is not None:
        body["labels"] = dict(labels)
    return body


# A schedule's optional fields: the Python argument and the API's name.
_SCHEDULE_OPTIONS = (("time_zone", "timeZone"), ("config_template_name", "configTemplateName"),
                     ("concurrency_policy", "concurrencyPolicy"), ("suspend", "suspend"),
                     ("starting_deadline_seconds", "startingDeadlineSeconds"),
                     ("successful_runs_history_limit", "successfulRunsHistoryLimit"),
                     ("failed_runs_history_limit", "failedRunsHistoryLimit"))


def schedule_body(name: str, schedule: str, job_name: str, config_overrides: Optional[Mapping[str, Any]],
                  labels: Optional[Mapping[str, str]], options: Mapping[str, Any]) -> Dict[str, Any]:
    """The Schedule JSON of POST and PUT /api/schedules/. An option left None is left out (the
    service's default); an unknown one is a TypeError here rather than a 400 later."""
    unknown = set(options) - {python for python, _ in _SCHEDULE_OPTIONS}
    if unknown:
        raise TypeError("unknown schedule option(s): %s" % ", ".join(sorted(unknown)))
    body: Dict[str, Any] = {"name": name, "schedule": schedule, "jobName": job_name}
    for python, api in _SCHEDULE_OPTIONS:
        if options.get(python) is not None:
            body[api] = options[python]
    if config_overrides is not None:
        body["configOverrides"] = dict(config_overrides)
    if labels is not None:
        body["labels"] = dict(labels)
    return body


def schedule_path(name: str, action: str = "") -> str:
    return "/api/schedules/%s%s" % (name, "/" + action if action else "")


def raise_for(response: httpx.Response) -> None:
    """An ApiError carrying the service's JSON for any answer >= 400 (read the body first)."""
    if response.status_code < 400:
        return
    try:
        body: Any = response.json()
    except ValueError:
        body = response.text
    raise error_for(response.status_code, body)


def backoff(attempt: int) -> float:
    return min(0.2 * (2 ** attempt), 5.0)


def retry_after(response: httpx.Response, attempt: int) -> float:
    value = response.headers.get("retry-after", "")
    return min(float(value), 30.0) if value.isdigit() else backoff(attempt)


@dataclass
class Event:
    """One server-sent event of GET /api/apps/events: `type` is ready, changed, deleted or reset."""
    type: str
    id: Optional[str]
    data: Dict[str, Any] = field(default_factory=dict)


class SseParser:
    """Turns lines of a text/event-stream into Events (comments and `retry:` lines are skipped)."""

    def __init__(self) -> None:
        self._type = "message"
        self._id: Optional[str] = None
        self._data: List[str] = []

    def feed(self, line: str) -> Optional[Event]:
        if line == "":
            if not self._data and self._type == "message":
                return None
            text = "\n".join(self._data)
            event = Event(self._type, self._id, json.loads(text) if text else {})
            self._type, self._data = "message", []
            return event
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "event":
            self._type = value
        elif name == "data":
            self._data.append(value)
        elif name == "id":
            self._id = value
        return None


class LogDecoder:
    """UTF-8 text from a byte stream, counting bytes so that a broken follow resumes at the next one."""

    def __init__(self, offset: int) -> None:
        self.offset = offset
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def decode(self, chunk: bytes) -> str:
        self.offset += len(chunk)
        return self._decoder.decode(chunk)

    def flush(self) -> str:
        return self._decoder.decode(b"", final=True)


def event_params(job_name: Optional[str], label_selector: LabelSelector, q: Optional[str]) -> Dict[str, str]:
    params = {"jobName": job_name, "labelSelector": selector_text(label_selector), "q": q}
    return {k: v for k, v in params.items() if v is not None}


def ended(app: Mapping[str, Any]) -> bool:
    return app.get("state") in END_STATES


def read_timeout_for(left: Optional[float], longest: float = 60.0) -> float:
    """A stream's read timeout no longer than what is left of wait()'s (heartbeats come every 15 s)."""
    return longest if left is None else max(0.05, min(longest, left))
