"""One events stream per service and key in a process, shared by every wait in it.

Airflow's triggerer runs all deferred tasks' triggers on one event loop. A stream per trigger
would hold one of the key's event streams per waiting task (the service caps them per key:
`--streams-per-key`, 16 by default), so 100 deferred tasks would meet 429s. Here the first wait
opens the stream, every later one joins it, and the last one to leave closes it."""
import asyncio
from typing import Any, Callable, Dict, Optional, Set, Tuple

from submission_service import END_STATES, AsyncClient, NotFoundError

ClientFactory = Callable[[], AsyncClient]
_FEEDS: Dict[Tuple[str, Optional[str], int], "SharedFeed"] = {}


class SharedFeed:
    """Waits for applications' ends on one events stream (the client reconnects with Last-Event-ID)."""

    def __init__(self, client_factory: ClientFactory, forget: Callable[[], None]) -> None:
        self._client_factory = client_factory
        self._forget = forget
        self._waiters: Dict[str, Set["asyncio.Future[Dict[str, Any]]"]] = {}
        self._stream: Optional["asyncio.Task[None]"] = None
        # One client (one connection pool) for the stream and every wait's first read: a client
        # per wait cost more CPU than the whole wait (bench/airflow).
        self._client: Optional[AsyncClient] = None

    def _shared_client(self) -> AsyncClient:
        if self._client is None:
            self._client = self._client_factory()
        return self._client

    async def wait_end(self, app_name: str) -> Dict[str, Any]:
        """The application once it is in an end state; NotFoundError when it is deleted meanwhile."""
        future: "asyncio.Future[Dict[str, Any]]" = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(app_name, set()).add(future)
        if self._stream is None:
            self._stream = asyncio.create_task(self._follow())
        try:
            # Registered first, then read: an end before the registration is seen here, one after
            # it on the stream (or by the stream's own re-read at `ready` / `reset`).
            self._settle(app_name, dict(await self._shared_client().get(app_name)))
            return await future
        finally:
            await self._leave(app_name, future)

    async def _leave(self, app_name: str, future: "asyncio.Future[Dict[str, Any]]") -> None:
        waiting = self._waiters.get(app_name, set())
        waiting.discard(future)
        if not waiting:
            self._waiters.pop(app_name, None)
        if self._waiters:
            return
        stream, client = self._stream, self._client
        self._stream, self._client = None, None
        self._forget()
        if stream is not None:
            stream.cancel()
            await asyncio.gather(stream, return_exceptions=True)
        if client is not None:
            await client.close()

    def _settle(self, app_name: str, app: Dict[str, Any]) -> None:
        if app.get("state") in END_STATES:
            for future in self._waiters.get(app_name, ()):
                if not future.done():
                    future.set_result(app)

    def _fail(self, app_name: Optional[str], error: BaseException) -> None:
        for name, futures in self._waiters.items():
            if app_name is None or name == app_name:
                for future in futures:
                    if not future.done():
                        future.set_exception(error)

    async def _follow(self) -> None:
        try:
            client = self._shared_client()
            async for event in client.events(max_reconnects=10):
                if event.type in ("ready", "reset"):
                    # What happened while the stream was not held: read each waited one again.
                    for name in list(self._waiters):
                        try:
                            self._settle(name, dict(await client.get(name)))
                        except NotFoundError as error:
                            self._fail(name, error)
                elif event.type == "deleted":
                    name = event.data.get("appName")
                    self._fail(name, NotFoundError(404, {"message": "application %s was deleted while waiting" % name}))
                elif event.type == "changed":
                    self._settle(str(event.data.get("appName")), event.data)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # the stream is lost for good: every wait on it learns why
            self._stream = None  # a wait that comes later opens a new one
            self._fail(None, error)


def feed_for(url: str, api_key: Optional[str], client_factory: ClientFactory) -> SharedFeed:
    """This event loop's feed of one service and key (a loop of its own per `airflow dags test` trigger)."""
    key = (url, api_key, id(asyncio.get_running_loop()))
    feed = _FEEDS.get(key)
    if feed is None:
        feed = _FEEDS[key] = SharedFeed(client_factory, lambda: _FEEDS.pop(key, None))
    return feed
