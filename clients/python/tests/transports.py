"""httpx transports for the client's tests: each forwards to the live service and counts, or breaks
a connection on purpose where a real network would (a lost answer, a cut stream)."""
import httpx


class CountRequests(httpx.HTTPTransport):
    """Forwards every request and keeps its path."""

    def __init__(self) -> None:
        super().__init__()
        self.paths = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.paths.append(request.url.path)
        return super().handle_request(request)


class CutLogOnce(httpx.HTTPTransport):
    """Breaks the first log answer after its first 100 bytes."""

    def __init__(self) -> None:
        super().__init__()
        self.requests = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        if not request.url.path.endswith("/log"):
            return response
        self.requests += 1
        if self.requests > 1:
            assert request.url.params["offset"] == "100"
            return response
        body = response.read()[:100]

        class Cut(httpx.SyncByteStream):
            def __iter__(self):
                yield body
                raise httpx.ReadError("connection cut", request=request)

        return httpx.Response(response.status_code, headers=response.headers, stream=Cut(), request=request)


def lose_answer(request: httpx.Request, response: httpx.Response) -> None:
    """The service did the request; its answer is lost as if the connection broke before it."""
    response.read()
    response.close()
    raise httpx.ReadError("connection lost before the answer", request=request)


class LoseFirstAnswer(httpx.HTTPTransport):
    """Forwards the first POST to the service and then fails as if the connection broke before its answer."""

    def __init__(self) -> None:
        super().__init__()
        self.lost = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        if request.method == "POST" and self.lost == 0:
            self.lost += 1
            lose_answer(request, response)
        return response


class CutEventsOnce(httpx.HTTPTransport):
    """Breaks the first events stream right after a chunk that carries a `changed` event."""

    def __init__(self) -> None:
        super().__init__()
        self.cut = False

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        if request.url.path != "/api/apps/events" or self.cut:
            return response
        inner, owner = response.stream, self

        class Cut(httpx.SyncByteStream):
            def __iter__(self):
                for chunk in inner:
                    yield chunk
                    if b"event: changed" in chunk:
                        owner.cut = True
                        raise httpx.ReadError("connection cut", request=request)

            def close(self) -> None:
                response.close()

        return httpx.Response(response.status_code, headers=response.headers, stream=Cut(), request=request)


class LoseStopAnswer(httpx.HTTPTransport):
    """Forwards every request; the answer to a stop is lost as if the connection broke."""

    def __init__(self) -> None:
        super().__init__()
        self.stops = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        if request.url.path.endswith("/stop"):
            self.stops += 1
            lose_answer(request, response)
        return response
