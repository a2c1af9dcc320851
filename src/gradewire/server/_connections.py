"""The server's connections: a cap on how many are open, deadlines, and JSON for bad HTTP.

A client that opens connections and sends nothing, or a header line now and then, holds a
file descriptor each; enough of them and the server cannot accept anyone. So:

- a connection must send a complete request head within ``header_timeout`` of opening
  (or of its first byte after an answer; checked a few times per deadline), and an idle
  keep-alive connection is closed after ``keepalive_timeout`` (aiohttp's own timer);
- at most ``max_connections`` are open: a new one makes room by closing a connection
  that has sent no request yet (the one open the longest), else the one idle (no request
  being handled) the longest, so a flood of silent connections displaces itself, not the
  clients between two requests; it is refused with a 503 only when every open connection
  is in the middle of a request;
- what aiohttp answers by itself to a request it cannot parse (a bad Content-Length, a
  NUL in a header) is JSON like every other error, and never repeats a header value:
  the value could be an ``Authorization`` header that carries the real token.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from aiohttp import web
from aiohttp.typedefs import Middleware
from aiohttp.web_request import BaseRequest

from gradewire.server._log_limit import LogLimiter
from gradewire.server._middlewares import error_answer, json_answer, malformed_request

__all__ = ["Connection", "Connections", "answer_in_time", "within"]

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_T = TypeVar("_T")
# Below asyncio's default high-water mark (64 KiB) for socket transports.
_SMALL_ANSWER = 32 * 1024


class Connection(web.RequestHandler):
    """aiohttp's protocol for one connection, with a header deadline and JSON errors."""

    def __init__(self, connections: Connections, manager: web.Server, **options: Any) -> None:
        super().__init__(manager, **options)
        self._connections = connections
        # When the head of the next request started (open, or its first byte); None while
        # a request is handled or the connection waits for the next one.
        self.head_since: float | None = None
        self._busy = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self.head_since = self._loop.time()

    def data_received(self, data: bytes) -> None:
        if self.head_since is None and not self._busy:
            self.head_since = self._loop.time()  # the first bytes of the next request
        super().data_received(data)

    def connection_lost(self, exc: BaseException | None) -> None:
        self.head_since = None
        self._connections.lost(self)
        super().connection_lost(exc)

    def request_started(self) -> None:
        """A request head arrived and is being handled: no deadline, not to be closed."""
        self._busy = True
        self.head_since = None
        self._connections.busy(self)

    def request_finished(self) -> None:
        """The answer is sent: the connection may wait for the next request, or be closed."""
        self._busy = False
        self._connections.idle(self)

    def handle_error(
        self,
        request: BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        """Aiohttp's answer to a request it could not parse (or a handler's failure)."""
        # aiohttp's own answer and log line quote the offending bytes; these never do.
        self._connections.log.log(
            "malformed-request",
            logging.WARNING,
            "gradewire serve: answered %d to a request from %s that could not be read (%s)",
            status,
            request.remote,
            type(exc).__name__ if exc is not None else "no detail",
        )
        if request.writer.output_size > 0:
            raise ConnectionError("an answer was partly sent; the connection is closed")
        text = (
            malformed_request(exc)
            if status == 400
            else f"the server could not answer ({status}); see its log"
        )
        response = error_answer(status, text)
        response.force_close()
        return response

    def head_too_slow(self) -> None:
        """Close the connection: its request head did not arrive in time."""
        self.head_since = None
        if not self._busy:
            self.force_close()


class _Refusal(asyncio.Protocol):
    """Answers 503 at once and closes: every connection of a full server is busy."""

    def __init__(self, answer: bytes) -> None:
        self._answer = answer

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.WriteTransport)
        transport.write(self._answer)
        transport.close()


class Connections:
    """The protocol factory for the listening socket: caps and tracks the open connections.

    Open connections are fresh (no request yet), idle (answered, waiting for or receiving
    the next head) or busy (a request is being handled or answered). Fresh and idle ones
    are kept in the order they became so, and making room closes the oldest fresh one,
    else the one idle the longest: a client that opens many connections and sends nothing
    cannot lock the others out, nor push a working client off its keep-alive connection.
    """

    def __init__(
        self,
        server: web.Server,
        *,
        max_connections: int,
        header_timeout: float,
        handler_options: Mapping[str, Any],
        log: LogLimiter,
    ) -> None:
        self.max_connections = max_connections
        self.header_timeout = header_timeout
        self.log = log
        self._server = server
        self._options = dict(handler_options)
        # Insertion order: open (fresh) or idle (idle) the longest first.
        self._fresh: dict[Connection, None] = {}
        self._idle: dict[Connection, None] = {}
        self._busy: set[Connection] = set()
        self._refusal = _refusal_answer(max_connections)

    def __len__(self) -> int:
        return len(self._fresh) + len(self._idle) + len(self._busy)

    async def enforce_head_deadline(self) -> None:
        """Close connections whose request head is late, for as long as the server runs.

        One sweep over the idle connections a few times per deadline, rather than a timer
        per request: the deadline is kept within a quarter of itself (at most 1 s late).
        """
        loop = asyncio.get_running_loop()
        period = min(self.header_timeout / 4, 1.0)
        while True:
            await asyncio.sleep(period)
            late = loop.time() - self.header_timeout
            for connection in [*self._fresh, *self._idle]:
                since = connection.head_since
                if since is not None and since <= late:
                    connection.head_too_slow()

    def __call__(self) -> asyncio.BaseProtocol:
        if len(self) >= self.max_connections:
            pool = self._fresh if self._fresh else self._idle
            oldest = next(iter(pool), None)
            if oldest is None:
                self.log.log(
                    "refused-connection",
                    logging.WARNING,
                    "gradewire serve: refused a connection: all %d open connections are "
                    "busy (raise --max-connections, or --max-concurrency if requests wait)",
                    self.max_connections,
                )
                return _Refusal(self._refusal)
            del pool[oldest]
            self.log.log(
                "closed-idle-connection",
                logging.WARNING,
                "gradewire serve: %d connections open (the limit): closing an idle one "
                "(one that sent nothing first) for a new one",
                self.max_connections,
            )
            oldest.force_close()
        connection = Connection(
            self, self._server, loop=asyncio.get_running_loop(), **self._options
        )
        self._fresh[connection] = None
        return connection

    def busy(self, connection: Connection) -> None:
        """``connection`` is handling a request."""
        if connection in self._fresh:
            del self._fresh[connection]
            self._busy.add(connection)
        elif connection in self._idle:
            del self._idle[connection]
            self._busy.add(connection)

    def idle(self, connection: Connection) -> None:
        """``connection`` answered and waits for the next request."""
        if connection in self._busy:
            self._busy.discard(connection)
            self._idle[connection] = None

    def lost(self, connection: Connection) -> None:
        """``connection`` is closed."""
        self._fresh.pop(connection, None)
        self._idle.pop(connection, None)
        self._busy.discard(connection)


def _refusal_answer(limit: int) -> bytes:
    response = json_answer(
        {
            "error": f"the server has its limit of {limit} connections open, each in the "
            "middle of a request; retry shortly, or start the server with a larger "
            "--max-connections"
        }
    )
    body = response.body
    assert isinstance(body, bytes)
    head = (
        "HTTP/1.1 503 Service Unavailable\r\n"
        "Content-Type: application/json; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Retry-After: 1\r\nConnection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


def answer_in_time(body_timeout: float) -> Middleware:
    """The outermost middleware: marks the connection busy, and sends the answer in time.

    The answer is sent here rather than after the middlewares, so that a client that does
    not read it is cut off after ``body_timeout`` seconds, and the connection counts as
    busy (never closed to make room) until its answer is out.
    """

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        protocol = request.protocol
        connection = protocol if isinstance(protocol, Connection) else None
        if connection is not None:
            connection.request_started()
        try:
            response = await handler(request)
            if _cannot_wait(request, response):
                await _send(request, response)
                return response
            try:
                await within(body_timeout, _send(request, response))
            except asyncio.TimeoutError:
                # The client does not read its answer: drop what is left of it unsent
                # (closing would wait until it is all sent) and the connection with it.
                transport = request.transport
                if transport is not None:
                    transport.abort()
            return response
        finally:
            if connection is not None:
                connection.request_finished()

    return middleware


if sys.version_info >= (3, 11):

    async def within(seconds: float, awaitable: Awaitable[_T]) -> _T:
        """``await awaitable``, or `asyncio.TimeoutError` after ``seconds``."""
        async with asyncio.timeout(seconds):  # no task per call, unlike wait_for
            return await awaitable

else:

    async def within(seconds: float, awaitable: Awaitable[_T]) -> _T:
        """``await awaitable``, or `asyncio.TimeoutError` after ``seconds``."""
        return await asyncio.wait_for(awaitable, seconds)


def _cannot_wait(request: web.Request, response: web.StreamResponse) -> bool:
    """Whether sending ``response`` is sure not to wait on the client (so needs no timer).

    Nothing of an earlier answer is queued, and this one is below the transport's
    high-water mark: writing it never waits for the client to read.
    """
    transport = request.transport
    if transport is None or transport.get_write_buffer_size():
        return False
    body = response.body if isinstance(response, web.Response) else None
    return isinstance(body, bytes) and len(body) < _SMALL_ANSWER


async def _send(request: web.Request, response: web.StreamResponse) -> None:
    await response.prepare(request)
    await response.write_eof()
