"""The trigger that waits for an application's end on the service's events stream (no polling), in
the triggerer: while Spark runs, the task holds no worker slot. All triggers of one service and key
in a triggerer share one stream (feed.py).

Why an end is held for `min_deferral_s`: Airflow 3's scheduler learns of the worker that exited on
`defer()` from its executor, asynchronously. When the trigger fires first, the resumed try can be
queued or running again before that stale "success" is processed, and the scheduler then fails the
task ("Executor ... reported that the task instance ... finished with state success, but the task
instance's state attribute is queued"; apache/airflow#66374, #72716). Nothing the trigger can read
tells when the executor's event was processed, so an end seen early (an error too: it resumes the
task as well) is held until the trigger has run `min_deferral_s`: by then the worker that deferred
has exited and been reported. Runs that end later pay nothing."""
import asyncio
import time
from typing import Any, AsyncIterator, Dict, Optional, Tuple

from airflow.triggers.base import BaseTrigger, TriggerEvent
from submission_service import AsyncClient, SubmissionServiceError

from .feed import feed_for
from .hooks import hook_for

# Seconds from the trigger's start before it fires; see the module's docstring (bench/airflow/quick-apps.ts).
DEFAULT_MIN_DEFERRAL_S = 15.0


class SparkApplicationTrigger(BaseTrigger):
    """Fires once: `{"status": "ended", "appName", "state", "stateDetail"}`, or `{"status": "error",
    "appName", "message"}` when the service could not be followed (or the application was deleted)."""

    def __init__(self, app_name: str, submission_service_conn_id: Optional[str] = None,
                 timeout: Optional[float] = None, min_deferral_s: float = DEFAULT_MIN_DEFERRAL_S) -> None:
        super().__init__()
        self.app_name = app_name
        self.submission_service_conn_id = submission_service_conn_id
        self.timeout = timeout
        self.min_deferral_s = min_deferral_s

    def serialize(self) -> Tuple[str, Dict[str, Any]]:
        # Only names: the key stays in the connection, never in the triggers table.
        return ("submission_service_airflow.triggers.SparkApplicationTrigger",
                {"app_name": self.app_name, "submission_service_conn_id": self.submission_service_conn_id,
                 "timeout": self.timeout, "min_deferral_s": self.min_deferral_s})

    async def run(self) -> AsyncIterator[TriggerEvent]:
        started = time.monotonic()
        event = await self._outcome()
        held = started + self.min_deferral_s - time.monotonic()
        if held > 0:
            # Not a wait for the application (it has ended): Airflow's own race, see the module's docstring.
            self.log.info("%s: %s; firing in %.1f s, after the exit of the worker that deferred (min_deferral_s)",
                          self.app_name, event.get("state") or event.get("message"), held)
            await asyncio.sleep(held)
        yield TriggerEvent(event)

    async def _outcome(self) -> Dict[str, Any]:
        hook = hook_for(self.submission_service_conn_id)
        try:
            url, api_key = await hook.aget_service()
            feed = feed_for(url, api_key, lambda: AsyncClient(url, api_key=api_key, timeout=hook.timeout))
            app = await asyncio.wait_for(feed.wait_end(self.app_name), timeout=self.timeout)
        except asyncio.TimeoutError:
            return {"status": "error", "appName": self.app_name, "message": "did not end within %s s" % self.timeout}
        except SubmissionServiceError as error:
            return {"status": "error", "appName": self.app_name, "message": str(error)}
        return {"status": "ended", "appName": self.app_name, "state": app.get("state"),
                "stateDetail": app.get("stateDetail", "")}

    async def on_kill(self) -> None:
        """The task was cleared or marked by a user while deferred: stop the application (not on a
        triggerer restart, which Airflow tells apart and which leaves Spark running)."""
        client = await hook_for(self.submission_service_conn_id).aget_conn()
        async with client:
            await client.stop(self.app_name)
        self.log.info("Stopped Spark application %s", self.app_name)
