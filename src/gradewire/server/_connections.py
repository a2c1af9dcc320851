"""The server's connections: a cap on how many are open, deadlines, and JSON for bad HTTP.

A client that opens connections and sends nothing, or a header line now and then, holds a
file descriptor each; enough of them and the server cannot accept anyone. So:

- a connection must send a complete request head within ``header_timeout`` of opening
  (or of its first byte after an answer), and an idle keep-alive connection is closed
  after ``keepalive_timeout`` (aiohttp's own timer);
- at most ``max_connections`` are open: a new one makes room by closing the connection
  that has been idle (no request being handled) the longest, and is refused with a 503
  only when every open connection is in the middle of a request;
- what aiohttp answers by itself to a request it cannot parse (a bad Content-Length, a
  NUL in a header) is JSON like every other error, and never repeats a header value:
  the value could be an ``Authorization`` header that carries the real token.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from aiohttp import http_exceptions, web
from aiohttp.typedefs import Middleware
from aiohttp.web_request import BaseRequest

from gradewire.server._log_limit import LogLimiter
from gradewire.server._middlewares import error_answer, json_answer

__all__ = ["Connection", "Connections", "answer_in_time"]

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

_NOT_READ = (
    "; the request was not read (header values are not repeated in answers or logs). "
    "Send valid HTTP/1.1, as any HTTP client library does"
)


def _malformed(exc: BaseException | None) -> str:
    if isinstance(exc, http_exceptions.LineTooLong):
        what = "a request line or header line is too long"
    elif isinstance(exc, http_exceptions.BadStatusLine):
        what = "the request line is not 'METHOD /path HTTP/1.1'"
    elif isinstance(exc, http_exceptions.InvalidURLError):
        what = "the request target is not a valid URL path"
    else:
        what = "a header (its name, its value, Content-Length or Transfer-Encoding) is malformed"
    return f"malformed HTTP request: {what}{_NOT_READ}"


class Connection(web.RequestHandler):
    """aiohttp's protocol for one connection, with a header deadline and JSON errors."""

    def __init__(self, connections: Connections, manager: web.Server, **options: Any) -> None:
        super().__init__(manager, **options)
        self._connections = connections
        self._deadline: asyncio.TimerHandle | None = None
        self._busy = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._deadline is None and not self._busy:
            self._arm()  # the first bytes of the next request: its head has a deadline
        super().data_received(data)

    def connection_lost(self, exc: BaseException | None) -> None:
        self._disarm()
        self._connections.lost(self)
        super().connection_lost(exc)

    def request_started(self) -> None:
        """A request head arrived and is being handled: no deadline, not to be closed."""
        self._busy = True
        self._disarm()
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
            _malformed(exc)
            if status == 400
            else f"the server could not answer ({status}); see its log"
        )
        response = error_answer(status, text)
        response.force_close()
        return response

    def _arm(self) -> None:
        self._deadline = self._loop.call_later(
            self._connections.header_timeout, self._head_too_slow
        )

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _head_too_slow(self) -> None:
        self._deadline = None
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

    Open connections are idle (waiting for, or receiving, a request head) or busy (a
    request is being handled or answered). Idle ones are kept in the order they became
    idle, so making room closes the one idle the longest: a client that opens many
    connections and sends nothing cannot lock the others out.
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
        self._idle: dict[Connection, None] = {}  # insertion order: idle the longest first
        self._busy: set[Connection] = set()
        self._refusal = _refusal_answer(max_connections)

    def __len__(self) -> int:
        return len(self._idle) + len(self._busy)

    def __call__(self) -> asyncio.BaseProtocol:
        if len(self) >= self.max_connections:
            if not self._idle:
                self.log.log(
                    "refused-connection",
                    logging.WARNING,
                    "gradewire serve: refused a connection: all %d open connections are "
                    "busy (raise --max-connections, or --max-concurrency if requests wait)",
                    self.max_connections,
                )
                return _Refusal(self._refusal)
            oldest = next(iter(self._idle))
            del self._idle[oldest]
            self.log.log(
                "closed-idle-connection",
                logging.WARNING,
                "gradewire serve: %d connections open (the limit): closing the one idle the "
                "longest for a new one",
                self.max_connections,
            )
            oldest.force_close()
        connection = Connection(
            self, self._server, loop=asyncio.get_running_loop(), **self._options
        )
        self._idle[connection] = None
        return connection

    def busy(self, connection: Connection) -> None:
        """``connection`` is handling a request."""
        if connection in self._idle:
            del self._idle[connection]
            self._busy.add(connection)

    def idle(self, connection: Connection) -> None:
        """``connection`` answered and waits for the next request."""
        if connection in self._busy:
            self._busy.discard(connection)
            self._idle[connection] = None

    def lost(self, connection: Connection) -> None:
        """``connection`` is closed."""
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
            try:
                await asyncio.wait_for(_send(request, response), body_timeout)
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


async def _send(request: web.Request, response: web.StreamResponse) -> None:
    await response.prepare(request)
    await response.write_eof()
