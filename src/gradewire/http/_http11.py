"""One HTTP/1.1 keep-alive connection as an asyncio protocol.

It writes a request, feeds what the server sends to an answer reader (`AnswerReader`, which
holds the grammar) and hands the answer over with gzip and deflate bodies decoded, within the
cap, so a gzip bomb cannot exhaust memory. `FastHttpSender` pools these.

An answer is handed over in two steps. The moment its last byte is read, the connection goes
back to its pool (``home``) and the caller's ``on_answer`` hook frees its concurrency slot; the
waiting task is resumed one loop turn later. When many answers arrive together, the calls
waiting for a slot thus get their requests out before the loop spends its time on the answers
(resuming each caller first left every slot idle while the whole batch was processed).

A request in flight holds as few objects as it can (no closure, no bound method or context
made per request): with hundreds in flight for 50 ms or more, each one outlives two garbage
collections and lands in the oldest generation, and the full collections that follow paused
the loop for tens of milliseconds (`bench/judge_throughput.py`).

It also tells apart the two ways a request can fail without an answer: the connection was
found closed, or refused the first byte, when the request was written (nothing reached the
server, so the request may go again on a new connection), or the connection ended after the
request went out (the server may have acted on it: a POST is not sent again, RFC 9112
section 9.3.1).
"""

from __future__ import annotations

import asyncio
import contextvars
import select
import zlib
from collections.abc import Callable
from typing import Protocol, cast

from gradewire.http._framing import Answer, AnswerReader, MalformedAnswer, ResponseTooLarge

__all__ = ["Dropped", "Exchanged", "Http11Connection", "Reader"]

Exchanged = tuple[int, dict[str, str], bytes, bool]
"""An answer as a connection hands it over: status, headers, body and whether it can be reused."""


class Dropped(ConnectionError):
    """The connection ended without a whole answer.

    Attributes:
        answered: Some bytes of an answer had come.
        sent: Some bytes of the request may have reached the server. False only when the
            connection was found closed, or refused the first byte, at the write.
    """

    def __init__(self, message: str, *, answered: bool, sent: bool = True) -> None:
        super().__init__(message)
        self.answered = answered
        self.sent = sent


class Reader(Protocol):
    """Reads the answer to each request sent on one connection (`AnswerReader`'s shape)."""

    def start(self, max_bytes: int) -> None: ...

    def feed(self, data: bytes) -> Answer | None: ...

    def feed_eof(self) -> Answer | None: ...


class Http11Connection(asyncio.Protocol):
    """One keep-alive connection: sends a request, reads the one answer to it.

    Args:
        loop: The loop it runs on.
        reader: Reads the answers (default: `AnswerReader`).
        home: Takes the connection back, with whether the answer left it reusable, the moment
            an answer is whole (the sender's pool).
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        reader: Reader | None = None,
        home: Callable[[Http11Connection, bool], None] | None = None,
    ) -> None:
        self.loop = loop
        self.reader: Reader = AnswerReader() if reader is None else reader
        self.home = home
        self.transport: asyncio.Transport | None = None
        self.alive = True
        self.idle_since = 0.0
        self.answered = False
        self.future: asyncio.Future[Exchanged] | None = None
        self.on_answer: Callable[[], None] | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.lost: asyncio.Future[None] = loop.create_future()  # done once the socket is gone
        self.max_bytes = 0
        self.sent = 0  # requests sent on it
        self.handed_back = 0  # the number of the last request whose answer was whole
        self._time_out_callback = self._time_out  # one bound method for every request
        # The context of its own callbacks (the timeout, the hand-over of an answer), which
        # read no context variable: without one, asyncio copies the caller's per request. One
        # per connection, as a context cannot be entered by two threads at once.
        self._context = contextvars.Context()

    # -- asyncio.Protocol -------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport, but not necessarily an asyncio.Transport subclass: uvloop's
        # (the loop of Ray's workers, vLLM and uvicorn) is not one.
        self.transport = cast(asyncio.Transport, transport)

    def connection_lost(self, exc: Exception | None) -> None:
        self.alive = False
        transport, self.transport = self.transport, None
        if transport is not None and not transport.is_closing():
            # Python 3.10's TLS transport warns as unclosed when the peer closed it first.
            transport.close()
        if not self.lost.done():
            self.lost.set_result(None)
        if self.future is None or self.future.done():
            return
        answer = self.reader.feed_eof()
        if answer is not None:  # an answer that runs to the close
            self._finish(answer)
            return
        cut = " in the middle of its answer" if self.answered else " without answering"
        self._fail(Dropped(f"the server closed the connection{cut}", answered=self.answered))

    def data_received(self, data: bytes) -> None:
        if self.future is None:
            self.alive = False  # bytes nobody asked for: never reuse this connection
            return
        self.answered = True
        try:
            answer = self.reader.feed(data)
        except (MalformedAnswer, ResponseTooLarge) as exc:
            self._fail(exc)
            self.close()
            return
        if answer is not None:
            self._finish(answer)

    # -- requests ---------------------------------------------------------------------------

    def send(
        self,
        data: bytes,
        deadline: float,
        max_bytes: int,
        on_answer: Callable[[], None] | None = None,
    ) -> asyncio.Future[Exchanged]:
        """Send one request; the answer must be whole by ``deadline`` (loop time).

        The moment the answer is whole the connection goes ``home`` and ``on_answer`` is
        called, from the protocol; the future is resolved one loop turn later. Neither is
        called when the exchange fails. ``handed_back == sent`` tells afterwards whether the
        connection went home for this request.
        """
        self.reader.start(max_bytes)
        self.max_bytes = max_bytes
        self.answered = False
        self.on_answer = on_answer
        self.sent += 1
        future = self.future = self.loop.create_future()
        transport = self.transport
        if transport is None or transport.is_closing():
            self._fail(Dropped("the connection had closed", answered=False, sent=False))
            return future
        self.timer = self.loop.call_at(deadline, self._time_out_callback, context=self._context)
        transport.write(data)
        if transport.is_closing():
            # The socket refused the first byte (the peer had reset the connection): a plain
            # transport closes at once then, having sent nothing.
            self._fail(Dropped("the connection was reset", answered=False, sent=False))
        return future

    def flushed(self) -> bool:
        """Whether the whole request has gone to the socket (a server may answer early)."""
        return self.transport is not None and self.transport.get_write_buffer_size() == 0

    def quiet(self) -> bool:
        """Whether nothing waits to be read: no bytes and no close the loop has not seen yet."""
        transport = self.transport
        if transport is None:
            return False
        sock = transport.get_extra_info("socket")
        if sock is None:
            return True
        if hasattr(select, "poll"):
            poller = select.poll()
            poller.register(sock.fileno(), select.POLLIN)
            return not poller.poll(0)
        return not select.select([sock.fileno()], [], [], 0)[0]  # pragma: no cover - Windows

    def close(self) -> None:
        self.alive = False
        if self.transport is not None:
            self.transport.close()

    def _time_out(self) -> None:
        self._fail(asyncio.TimeoutError())
        self.close()

    def _fail(self, exc: BaseException) -> None:
        self.alive = False  # whatever is left of the answer would be read as the next one
        if self.timer is not None:
            self.timer.cancel()
        future, self.future = self.future, None
        self.on_answer = None
        if future is not None and not future.done():
            future.set_exception(exc)

    def _finish(self, answer: Answer) -> None:
        body = answer.body
        encoding = answer.headers.get("content-encoding")
        if encoding is not None and body:
            try:
                body = self._decode(body, encoding.strip().lower(), answer.status)
            except (ResponseTooLarge, MalformedAnswer) as exc:
                self._fail(exc)
                self.close()
                return
        if self.timer is not None:
            self.timer.cancel()
        future, self.future = self.future, None
        on_answer, self.on_answer = self.on_answer, None
        if future is None or future.done():
            return
        exchanged = (answer.status, answer.headers, body, answer.reusable)
        self.handed_back = self.sent
        if self.home is not None:
            self.home(self, answer.reusable)
        if on_answer is not None:
            on_answer()
        self.loop.call_soon(_settle, future, exchanged, context=self._context)

    def _decode(self, body: bytes, encoding: str, status: int) -> bytes:
        if encoding in ("gzip", "x-gzip"):
            decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif encoding == "deflate":
            decoder = zlib.decompressobj()
        else:
            return body  # not one this client asks for: handed on as it came
        try:
            # Bounded output: a small body that inflates to gigabytes stops at the cap.
            decoded = decoder.decompress(body, self.max_bytes + 1)
        except zlib.error as exc:
            raise MalformedAnswer(f"undecodable compressed body ({exc})") from exc
        if len(decoded) > self.max_bytes:
            raise ResponseTooLarge(
                f"its {encoding} body of {len(body)} bytes decodes to more than "
                f"{self.max_bytes} bytes",
                status=status,
            )
        if not decoder.eof:
            raise MalformedAnswer("undecodable compressed body (incomplete or truncated stream)")
        return decoded


def _settle(future: asyncio.Future[Exchanged], exchanged: Exchanged) -> None:
    if not future.done():  # its task may have been cancelled in the meantime
        future.set_result(exchanged)
