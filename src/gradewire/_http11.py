"""One HTTP/1.1 keep-alive connection as an asyncio protocol.

It sends a request and parses the answer: bodies sized by Content-Length, chunked or read to
the close; 1xx answers skipped; gzip and deflate decoded. `FastHttpSender` pools these.
"""

from __future__ import annotations

import asyncio
import zlib

__all__ = ["Dropped", "Http11Connection"]

_MAX_HEAD = 64 * 1024


class Dropped(ConnectionError):
    """The server closed the connection; ``answered`` tells if any answer byte had come."""

    def __init__(self, message: str, *, answered: bool) -> None:
        super().__init__(message)
        self.answered = answered


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
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

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
            try:
                self._finish()
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
        except (ValueError, IndexError) as exc:
            self._fail(Dropped(f"malformed HTTP answer ({exc})", answered=True))
            self.close()
        except zlib.error as exc:
            self._fail(Dropped(f"undecodable compressed body ({exc})", answered=True))
            self.close()

    # -- requests ---------------------------------------------------------------------------

    def send(
        self, data: bytes, timeout: float
    ) -> asyncio.Future[tuple[int, dict[str, str], bytes, bool]]:
        assert self.transport is not None
        self._reset()
        self.buffer.clear()
        future = self.future = self.loop.create_future()
        self.timer = self.loop.call_later(timeout, self._time_out)
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
        if self.timer is not None:
            self.timer.cancel()
        future, self.future = self.future, None
        if future is not None and not future.done():
            future.set_exception(exc)

    def _finish(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
        body = bytes(self.body)
        encoding = self.headers.get("content-encoding", "").lower()
        if encoding in ("gzip", "x-gzip"):
            body = zlib.decompress(body, 16 + zlib.MAX_WBITS)
        elif encoding == "deflate":
            body = zlib.decompress(body)
        future, self.future = self.future, None
        reusable = self.keep_alive and self.mode != "close" and not self.buffer
        if future is not None and not future.done():
            future.set_result((self.status, self.headers, body, reusable))

    def _parse(self) -> None:
        buffer = self.buffer
        while not self.mode:
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(buffer) > _MAX_HEAD:
                    raise ValueError("answer head too large")
                return
            lines = bytes(buffer[:end]).decode("latin-1").split("\r\n")
            del buffer[: end + 4]
            version, status = lines[0].split(" ", 2)[:2]
            if not version.startswith("HTTP/1."):
                raise ValueError(f"not an HTTP/1.x answer: {lines[0][:40]!r}")
            self.status = int(status)
            if 100 <= self.status < 200:
                continue  # informational (100 Continue, 103 Early Hints): the answer follows
            headers = self.headers
            for line in lines[1:]:
                name, _, value = line.partition(":")
                name = name.strip().lower()
                headers[name] = (
                    f"{headers[name]}, {value.strip()}" if name in headers else value.strip()
                )
            connection = headers.get("connection", "").lower()
            self.keep_alive = (
                connection != "close" if version == "HTTP/1.1" else connection == "keep-alive"
            )
            if "chunked" in headers.get("transfer-encoding", "").lower():
                self.mode = "chunked"
            elif "content-length" in headers:
                self.mode = "length"
                self.remaining = int(headers["content-length"])
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
        # "close": the body is what arrives until the server closes the connection.

    def _parse_chunks(self) -> None:
        buffer = self.buffer
        while True:
            line_end = buffer.find(b"\r\n")
            if line_end < 0:
                return
            size = int(bytes(buffer[:line_end]).split(b";", 1)[0].strip(), 16)
            if size == 0:  # the last chunk; trailer lines, if any, end with an empty line
                rest = line_end + 2
                if buffer[rest : rest + 2] == b"\r\n":
                    end = rest + 2
                else:
                    trailers_end = buffer.find(b"\r\n\r\n", rest)
                    if trailers_end < 0:
                        return
                    end = trailers_end + 4
                del buffer[:end]
                self._finish()
                return
            if len(buffer) < line_end + 2 + size + 2:
                return
            self.body += buffer[line_end + 2 : line_end + 2 + size]
            del buffer[: line_end + 2 + size + 2]
