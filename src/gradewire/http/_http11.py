"""One HTTP/1.1 keep-alive connection as an asyncio protocol.

It sends a request and parses the answer: bodies sized by Content-Length, chunked or read to
the close; 1xx answers skipped; gzip and deflate decoded. `FastHttpSender` pools these.

Parsing is strict where a lax reading could misframe the body (Content-Length must be digits,
and repeated values must agree; chunk sizes must be hex) and tolerant where h11 and httpx are
(lines ending in a bare LF, obsolete folded header lines). A malformed answer fails at once,
never by waiting for bytes that will not come. Bodies, and their decompressed form, are capped
(`ResponseTooLarge`), so a huge answer or a gzip bomb cannot exhaust memory.
"""

from __future__ import annotations

import asyncio
import zlib
from typing import cast

from gradewire.http._framing import (
    CHUNK_LINE,
    MAX_HEAD,
    blank_line,
    check_partial_chunk_line,
    content_length,
    read_headers,
)

__all__ = ["Dropped", "Http11Connection", "ResponseTooLarge"]


class Dropped(ConnectionError):
    """The server closed the connection; ``answered`` tells if any answer byte had come."""

    def __init__(self, message: str, *, answered: bool) -> None:
        super().__init__(message)
        self.answered = answered


class ResponseTooLarge(Exception):
    """The answer (or its decompressed body) is larger than the connection's cap.

    Attributes:
        detail: How large it is or claims to be, for the error message.
        status: The HTTP status of the answer.
    """

    def __init__(self, detail: str, *, status: int) -> None:
        super().__init__(detail)
        self.detail = detail
        self.status = status


class Http11Connection(asyncio.Protocol):
    """One keep-alive connection: sends a request, parses the one answer to it."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.transport: asyncio.Transport | None = None
        self.alive = True
        self.idle_since = 0.0
        self.buffer = bytearray()
        self.future: asyncio.Future[tuple[int, dict[str, str], bytes, bool]] | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.lost: asyncio.Future[None] = loop.create_future()  # done once the socket is gone
        self.max_bytes = 0
        self._reset()

    def _reset(self) -> None:
        self.status = 0
        self.headers: dict[str, str] = {}
        self.mode = ""  # "" while reading the head, then "length", "chunked" or "close"
        self.remaining = 0
        self.body = bytearray()
        self.keep_alive = True
        self.answered = False

    # -- asyncio.Protocol -------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # Not an isinstance check: uvloop's transports (Ray's async actors run on uvloop)
        # have every method of asyncio.Transport but do not derive from it.
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
        if self.mode == "close":
            self.body += self.buffer
            self.buffer.clear()
            try:
                self._finish()
            except ResponseTooLarge as error:
                self._fail(error)
            except zlib.error as error:
                self._fail(Dropped(f"undecodable compressed body ({error})", answered=True))
            return
        self._fail(Dropped("the server closed the connection", answered=self.answered))

    def data_received(self, data: bytes) -> None:
        if self.future is None:
            self.alive = False  # bytes nobody asked for: never reuse this connection
            return
        self.answered = True
        self.buffer += data
        try:
            self._parse()
        except ResponseTooLarge as exc:
            self._fail(exc)
            self.close()
        except (ValueError, IndexError) as exc:
            self._fail(Dropped(f"malformed HTTP answer ({exc})", answered=True))
            self.close()
        except zlib.error as exc:
            self._fail(Dropped(f"undecodable compressed body ({exc})", answered=True))
            self.close()

    # -- requests ---------------------------------------------------------------------------

    def send(
        self, data: bytes, deadline: float, max_bytes: int
    ) -> asyncio.Future[tuple[int, dict[str, str], bytes, bool]]:
        """Send one request; the answer must be whole by ``deadline`` (loop time)."""
        assert self.transport is not None
        self._reset()
        self.buffer.clear()
        self.max_bytes = max_bytes
        future = self.future = self.loop.create_future()
        self.timer = self.loop.call_at(deadline, self._time_out)
        self.transport.write(data)
        return future

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

    def _finish(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
        body = bytes(self.body)
        encoding = self.headers.get("content-encoding")
        if encoding is not None and body:
            body = self._decode(body, encoding.strip().lower())
        future, self.future = self.future, None
        reusable = self.keep_alive and self.mode != "close" and not self.buffer
        if future is not None and not future.done():
            future.set_result((self.status, self.headers, body, reusable))

    def _decode(self, body: bytes, encoding: str) -> bytes:
        if encoding in ("gzip", "x-gzip"):
            decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif encoding == "deflate":
            decoder = zlib.decompressobj()
        else:
            return body  # not one this client asks for: handed on as it came
        # Bounded output: a small body that inflates to gigabytes stops at the cap.
        decoded = decoder.decompress(body, self.max_bytes + 1)
        if len(decoded) > self.max_bytes:
            raise ResponseTooLarge(
                f"its {encoding} body of {len(body)} bytes decodes to more than "
                f"{self.max_bytes} bytes",
                status=self.status,
            )
        if not decoder.eof:
            raise zlib.error("incomplete or truncated stream")
        return decoded

    def _too_large(self, detail: str) -> ResponseTooLarge:
        return ResponseTooLarge(detail, status=self.status)

    def _parse(self) -> None:
        buffer = self.buffer
        while not self.mode:
            text_end, end = blank_line(buffer, 0)
            if end < 0 or end > MAX_HEAD:
                if len(buffer) > MAX_HEAD:
                    raise ValueError("answer head too large")
                return
            lines = bytes(buffer[:text_end]).decode("latin-1").split("\n")
            del buffer[:end]
            status_line = lines[0].rstrip("\r")
            version, status = status_line.split(" ", 2)[:2]
            if not version.startswith("HTTP/1."):
                raise ValueError(f"not an HTTP/1.x answer: {status_line[:40]!r}")
            if not (len(status) == 3 and status.isascii() and status.isdigit()):
                raise ValueError(f"invalid status code {status[:20]!r}")
            self.status = int(status)
            if 100 <= self.status < 200:
                continue  # informational (100 Continue, 103 Early Hints): the answer follows
            self.headers = headers = read_headers(lines)
            connection = headers.get("connection", "").lower()
            self.keep_alive = (
                connection != "close" if version == "HTTP/1.1" else connection == "keep-alive"
            )
            transfer = headers.get("transfer-encoding")
            if transfer is not None and transfer.strip().lower() not in ("", "identity"):
                if transfer.strip().lower() != "chunked":
                    raise ValueError(f"unsupported Transfer-Encoding {transfer[:40]!r}")
                self.mode = "chunked"
                if "content-length" in headers:
                    # Both framings at once is how responses are smuggled: use this answer
                    # (chunked wins, RFC 9112) but never the connection again.
                    self.keep_alive = False
            elif "content-length" in headers:
                self.mode = "length"
                self.remaining = content_length(headers["content-length"])
                if self.remaining > self.max_bytes:
                    raise self._too_large(f"its Content-Length is {self.remaining} bytes")
            elif self.status in (204, 304):
                self.mode = "length"
            else:
                self.mode = "close"
        if self.mode == "length":
            if len(buffer) >= self.remaining:
                self.body += buffer[: self.remaining]
                del buffer[: self.remaining]
                self._finish()
        elif self.mode == "chunked":
            self._parse_chunks()
        elif len(buffer) > self.max_bytes:
            # "close": the body is what arrives until the server closes the connection.
            raise self._too_large(f"more than {self.max_bytes} bytes arrived")

    def _parse_chunks(self) -> None:
        buffer = self.buffer
        while True:
            line = CHUNK_LINE.match(buffer)
            if line is None:
                check_partial_chunk_line(buffer)
                return
            size = int(line.group(1), 16)
            start = line.end()
            if size == 0:  # the last chunk; trailer lines, if any, end with an empty line
                _, end = blank_line(buffer, start)
                if end < 0:
                    if len(buffer) - start > MAX_HEAD:
                        raise ValueError("chunked trailers too large")
                    return
                del buffer[:end]
                self._finish()
                return
            if len(self.body) + size > self.max_bytes:
                raise self._too_large(f"its chunks add up to more than {self.max_bytes} bytes")
            data_end = start + size
            if len(buffer) <= data_end:
                return
            after = buffer[data_end]
            if after == 0x0A:  # bare LF, tolerated
                end = data_end + 1
            elif after == 0x0D:
                if len(buffer) <= data_end + 1:
                    return
                if buffer[data_end + 1] != 0x0A:
                    raise ValueError("chunk data not followed by CRLF")
                end = data_end + 2
            else:
                raise ValueError("chunk data longer than its chunk size")
            self.body += buffer[start:data_end]
            del buffer[:end]
