"""The trigger that waits for an application's end on the service's events stream (no polling), in
the triggerer: while Spark runs, the task holds no worker slot. All triggers of one service and key
in a triggerer share one stream (feed.py)."""
import asyncio
from typing import Any, AsyncIterator, Dict, Optional, Tuple

from airflow.triggers.base import BaseTrigger, TriggerEvent
from submission_service import AsyncClient, SubmissionServiceError

from .feed import feed_for
from .hooks import hook_for


class SparkApplicationTrigger(BaseTrigger):
    """Fires once: `{"status": "ended", "appName", "state", "stateDetail"}`, or `{"status": "error",
    "appName", "message"}` when the service could not be followed (or the application was deleted)."""

    def __init__(self, app_name: str, submission_service_conn_id: Optional[str] = None,
                 timeout: Optional[float] = None) -> None:
        super().__init__()
        self.app_name = app_name
        self.submission_service_conn_id = submission_service_conn_id
        self.timeout = timeout

    def serialize(self) -> Tuple[str, Dict[str, Any]]:
        # Only names: the key stays in the connection, never in the triggers table.
        return ("submission_service_airflow.triggers.SparkApplicationTrigger",
                {"app_name": self.app_name, "submission_service_conn_id": self.submission_service_conn_id,
                 "timeout": self.timeout})

    async def run(self) -> AsyncIterator[TriggerEvent]:
        hook = hook_for(self.submission_service_conn_id)
        try:
            url, api_key = await hook.aget_service()
            feed = feed_for(url, api_key, lambda: AsyncClient(url, api_key=api_key, timeout=hook.timeout))
            app = await asyncio.wait_for(feed.wait_end(self.app_name), timeout=self.timeout)
        except asyncio.TimeoutError:
            yield TriggerEvent({"status": "error", "appName": self.app_name,
                                "message": "did not end within %s s" % self.timeout})
            return
        except SubmissionServiceError as error:
            yield TriggerEvent({"status": "error", "appName": self.app_name, "message": str(error)})
            return
        yield TriggerEvent({"status": "ended", "appName": self.app_name, "state": app.get("state"),
                            "stateDetail": app.get("stateDetail", "")})

    async def on_kill(self) -> None:
        """The task was cleared or marked by a user while deferred: stop the application (not on a
        triggerer restart, which Airflow tells apart and which leaves Spark running)."""
        client = await hook_for(self.submission_service_conn_id).aget_conn()
        async with client:
            await client.stop(self.app_name)
        self.log.info("Stopped Spark application %s", self.app_name)
