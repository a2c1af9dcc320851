"""One HTTP/1.1 keep-alive connection as an asyncio protocol.

It writes a request, feeds what the server sends to an answer reader (`AnswerReader`, which
holds the grammar) and hands the answer over with gzip and deflate bodies decoded, within the
cap, so a gzip bomb cannot exhaust memory. `FastHttpSender` pools these.

It also tells apart the two ways a request can fail without an answer: the connection was
found closed, or refused the first byte, when the request was written (nothing reached the
server, so the request may go again on a new connection), or the connection ended after the
request went out (the server may have acted on it: a POST is not sent again, RFC 9112
section 9.3.1).
"""

from __future__ import annotations

import asyncio
import select
import zlib
from typing import Protocol, cast

from gradewire.http._framing import Answer, AnswerReader, MalformedAnswer, ResponseTooLarge

__all__ = ["Dropped", "Http11Connection", "Reader"]


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
    """One keep-alive connection: sends a request, reads the one answer to it."""

    def __init__(self, loop: asyncio.AbstractEventLoop, reader: Reader | None = None) -> None:
        self.loop = loop
        self.reader: Reader = AnswerReader() if reader is None else reader
        self.transport: asyncio.Transport | None = None
        self.alive = True
        self.idle_since = 0.0
        self.answered = False
        self.future: asyncio.Future[tuple[int, dict[str, str], bytes, bool]] | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.lost: asyncio.Future[None] = loop.create_future()  # done once the socket is gone
        self.max_bytes = 0

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
        self, data: bytes, deadline: float, max_bytes: int
    ) -> asyncio.Future[tuple[int, dict[str, str], bytes, bool]]:
        """Send one request; the answer must be whole by ``deadline`` (loop time)."""
        self.reader.start(max_bytes)
        self.max_bytes = max_bytes
        self.answered = False
        future = self.future = self.loop.create_future()
        transport = self.transport
        if transport is None or transport.is_closing():
            self._fail(Dropped("the connection had closed", answered=False, sent=False))
            return future
        self.timer = self.loop.call_at(deadline, self._time_out)
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
        if future is not None and not future.done():
            future.set_result((answer.status, answer.headers, body, answer.reusable))

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
