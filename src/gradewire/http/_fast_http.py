"""A lean HTTP/1.1 client for JSON POSTs, on asyncio protocols and the standard library.

Judge rewards wait on fan-out, and at hundreds of calls in flight the client's CPU per request
sets the pace: `bench/judge_throughput.py` measures it beside httpx and aiohttp.

What it does: keep-alive connections per host (most recently used first, dropped after a few
idle seconds, before servers time them out), TLS through `ssl`, answers read as RFC 9112 says
(`AnswerReader`: sized by Content-Length, chunked or read to the close, 1xx answers skipped),
gzip and deflate bodies decoded. ``timeout`` is one deadline for the whole attempt: connecting
and reading the answer both fit in it.

A request goes again on a new connection, within the same attempt, only when not one byte of
it can have reached the server: the kept-alive connection was found closed, or refused the
first byte, when it was written. Once a request has gone out, a connection that ends without an
answer is a `RetryableError`: the server may have acted on it, so sending it again is the
caller's `RetryPolicy`'s decision, counted as an attempt (RFC 9112 section 9.3.1; aiohttp
resends only idempotent methods on a reused connection).

Answers larger than ``max_response_bytes`` (also once decompressed) fail with
`ModelHTTPError`, not retried; a malformed answer fails as a `RetryableError` and its
connection is closed, never reused. What it does not do: proxies, HTTP/2, redirects;
`OpenAIChatModel` sends through httpx when the environment names a proxy for the host.
"""

from __future__ import annotations

import asyncio
import functools
import os
import ssl
from collections.abc import Callable, Mapping
from typing import NamedTuple
from urllib.parse import urlsplit

from gradewire.core._errors import InvalidInputError, InvalidTypeError
from gradewire.http._framing import MalformedAnswer, ResponseTooLarge
from gradewire.http._http11 import Dropped, Http11Connection, Reader
from gradewire.http._retry import ModelHTTPError, RetryableError

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "FastHttpSender",
    "HttpAnswer",
    "connection_failure",
    "max_response_bytes_setting",
    "shared_ssl_context",
    "timeout_failure",
    "too_large_failure",
]

HttpAnswer = tuple[int, Mapping[str, str], bytes]

DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024
"""The largest answer body a sender accepts by default, also once decompressed (64 MiB)."""

_IDLE_SECONDS = 4.0  # below common server keep-alive timeouts (uvicorn: 5 s)
# Idle longer than this, a connection is checked for a close the loop has not read yet before
# it is reused: the server's keep-alive timeout can run out then. Below it, the loop has read
# any close; the check is skipped as it costs a system call per request at full fan-out.
_CHECK_AFTER_SECONDS = 1.0
_CLOSE_SECONDS = 1.0


def timeout_failure(url: str, timeout: float) -> RetryableError:
    return RetryableError(
        f"no answer within the timeout of {timeout:g}s",
        advice=(
            "the server is too slow for the timeout: raise attempt_timeout=, lower max_concurrency "
            f"(fewer calls queue on the server), or check the server at {url}"
        ),
    )


def too_large_failure(url: str, detail: str, status: int, max_bytes: int) -> ModelHTTPError:
    """The final error for an answer over the size cap: a retry would get the same."""
    return ModelHTTPError(
        f"the answer from {url} (HTTP {status}) exceeded max_response_bytes={max_bytes}: "
        f"{detail}. If answers this large are expected, raise max_response_bytes= (the "
        f"default is {DEFAULT_MAX_RESPONSE_BYTES} bytes); otherwise check what the server "
        "sends",
        endpoint=url,
        status=status,
    )


def max_response_bytes_setting(value: object) -> int:
    """Check a ``max_response_bytes=`` argument: a positive int."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidTypeError(
            f"max_response_bytes must be an int (bytes), not {type(value).__name__}; e.g. "
            f"{DEFAULT_MAX_RESPONSE_BYTES} for 64 MiB"
        )
    if value < 1:
        raise InvalidInputError(f"max_response_bytes must be >= 1, not {value}")
    return value


def _malformed_failure(url: str, exc: MalformedAnswer) -> RetryableError:
    return RetryableError(
        f"malformed HTTP answer ({exc})",
        advice=(
            f"what answers at {url} does not speak HTTP/1.1 as RFC 9112 writes it: check "
            "that the URL names the model server itself (not a proxy, a TLS port or another "
            "service)"
        ),
    )


def connection_failure(url: str, exc: BaseException) -> RetryableError:
    reason = str(exc) or type(exc).__name__
    return RetryableError(
        f"connection failed ({type(exc).__name__}: {reason})",
        advice=f"check that the server is running and reachable at {url}",
    )


_ssl_context: ssl.SSLContext | None = None


def shared_ssl_context() -> ssl.SSLContext:
    """One verifying TLS context for every client, as loading the CA bundle is slow.

    The CAs are certifi's (as httpx uses), or those that ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``
    name, for private CAs.
    """
    global _ssl_context
    if _ssl_context is None:
        cafile, capath = os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")
        if cafile or capath:
            _ssl_context = ssl.create_default_context(cafile=cafile, capath=capath)
            return _ssl_context
        try:
            import certifi  # comes with httpx: the same CAs as httpx uses

            _ssl_context = ssl.create_default_context(cafile=certifi.where())
        except ImportError:  # pragma: no cover
            _ssl_context = ssl.create_default_context()
    return _ssl_context


class _Target(NamedTuple):
    key: tuple[str, int, bool]  # host, port, TLS
    host: str
    port: int
    tls: bool
    head: bytes  # request line, Host and the other fixed headers


class _Exchange(NamedTuple):
    url: str
    data: bytes  # the whole request
    timeout: float
    max_bytes: int


class FastHttpSender:
    """Sends POSTs over pooled keep-alive connections (bound to the loop that uses it).

    Args:
        ssl_context: Verifies servers on https URLs (default: `shared_ssl_context`).
        reader: Makes the answer reader of each new connection (default: `AnswerReader`);
            another reader of the same shape can be measured in its place.
    """

    def __init__(
        self,
        ssl_context: ssl.SSLContext | None = None,
        *,
        reader: Callable[[], Reader] | None = None,
    ) -> None:
        self._ssl_context = ssl_context
        self._reader = reader
        self._targets: dict[str, _Target] = {}
        self._idle: dict[tuple[str, int, bool], list[Http11Connection]] = {}
        self._busy: set[Http11Connection] = set()
        self._header_blocks: dict[int, tuple[Mapping[str, str], bytes]] = {}

    async def post(
        self,
        url: str,
        body: bytes,
        headers: Mapping[str, str],
        timeout: float,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        on_answer: Callable[[], None] | None = None,
    ) -> HttpAnswer:
        """POST ``body``; ``timeout`` bounds the whole call, connecting included.

        ``on_answer`` is called once the answer is whole, its connection already back in the
        pool, before this call returns (see `Sender.post`).
        """
        target = self._targets.get(url)
        if target is None:
            target = self._targets[url] = _parse_target(url)
        cached = self._header_blocks.get(id(headers))
        if cached is None or cached[0] is not headers:
            # Clients pass the same headers dict on every call: encode it once.
            block = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
            cached = self._header_blocks[id(headers)] = (headers, block.encode("latin-1"))
        data = b"".join(
            (target.head, b"Content-Length: %d\r\n" % len(body), cached[1], b"\r\n", body)
        )
        exchange = _Exchange(url, data, timeout, max_response_bytes)
        now = asyncio.get_running_loop().time()
        deadline = now + timeout
        connection = self._take_idle(target, now)
        fresh = connection is None
        while True:
            if connection is None:
                connection = await self._connect(target, url, timeout, deadline)
            try:
                return await self._exchange(connection, exchange, deadline, on_answer)
            except Dropped as exc:
                if exc.sent or fresh:
                    raise connection_failure(url, exc) from exc
                # A kept-alive connection found closed at the write: nothing reached the
                # server, so the request goes again on a new one.
                connection, fresh = None, True

    def _take_idle(self, target: _Target, now: float) -> Http11Connection | None:
        idle = self._idle.get(target.key)
        while idle:
            connection = idle.pop()
            idle_for = now - connection.idle_since
            if (
                connection.alive
                and idle_for < _IDLE_SECONDS
                and (idle_for < _CHECK_AFTER_SECONDS or connection.quiet())
            ):
                return connection
            connection.close()
        return None

    async def _connect(
        self, target: _Target, url: str, timeout: float, deadline: float
    ) -> Http11Connection:
        loop = asyncio.get_running_loop()
        tls = self._tls_context() if target.tls else None
        reader = self._reader
        home = functools.partial(self._home, self._idle.setdefault(target.key, []))
        try:
            _, connection = await asyncio.wait_for(
                loop.create_connection(
                    lambda: Http11Connection(loop, None if reader is None else reader(), home),
                    target.host,
                    target.port,
                    ssl=tls,
                    server_hostname=target.host if tls else None,
                ),
                max(deadline - loop.time(), 0.0),
            )
        except asyncio.TimeoutError as exc:
            raise timeout_failure(url, timeout) from exc
        except OSError as exc:  # refused, unreachable, DNS, TLS handshake (ssl.SSLError)
            raise connection_failure(url, exc) from exc
        return connection

    def _tls_context(self) -> ssl.SSLContext:
        if self._ssl_context is None:
            self._ssl_context = shared_ssl_context()
        return self._ssl_context

    def _home(
        self, idle: list[Http11Connection], connection: Http11Connection, reusable: bool
    ) -> None:
        # From the protocol, the moment an answer is whole: back to the pool before its caller
        # resumes, so that a call waiting for a slot can take it on this loop turn.
        self._busy.discard(connection)
        if reusable and connection.alive and connection.flushed():
            connection.idle_since = connection.loop.time()
            idle.append(connection)
        else:
            connection.close()

    async def _exchange(
        self,
        connection: Http11Connection,
        exchange: _Exchange,
        deadline: float,
        on_answer: Callable[[], None] | None,
    ) -> HttpAnswer:
        self._busy.add(connection)
        future = connection.send(exchange.data, deadline, exchange.max_bytes, on_answer)
        number = connection.sent
        try:
            status, headers, body, _ = await future
        except BaseException as exc:
            if connection.handed_back == number:
                raise  # cancelled after its answer came: the connection is the pool's again
            self._busy.discard(connection)
            connection.close()  # failed, timed out or cancelled mid-answer: never reused
            if isinstance(exc, asyncio.TimeoutError):
                raise timeout_failure(exchange.url, exchange.timeout) from exc
            if isinstance(exc, ResponseTooLarge):
                raise too_large_failure(
                    exchange.url, exc.detail, exc.status, exchange.max_bytes
                ) from exc
            if isinstance(exc, MalformedAnswer):
                raise _malformed_failure(exchange.url, exc) from exc
            raise
        return status, headers, body

    async def aclose(self) -> None:
        connections = [c for idle in self._idle.values() for c in idle] + list(self._busy)
        self._idle.clear()
        self._busy.clear()
        for connection in connections:
            connection.close()
        # Wait for the sockets to go (a TLS close takes a few loop turns), so none outlives
        # the loop; bounded, as a peer may never answer a TLS close.
        waiting = [c.lost for c in connections if not c.lost.done()]
        if waiting:
            await asyncio.wait(waiting, timeout=_CLOSE_SECONDS)


def _parse_target(url: str) -> _Target:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInputError(f"invalid URL {url!r}: it needs http:// or https:// and a host")
    tls = parts.scheme == "https"
    try:
        port = parts.port or (443 if tls else 80)
    except ValueError as exc:
        raise InvalidInputError(f"invalid URL {url!r}: {exc}") from exc
    host = parts.hostname
    shown = f"[{host}]" if ":" in host else host
    if port != (443 if tls else 80):
        shown = f"{shown}:{port}"
    path = parts.path or "/"
    if parts.query:
        path = f"{path}?{parts.query}"
    # Only encodings this client decodes; without the header a server may pick any.
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {shown}\r\nUser-Agent: gradewire\r\n"
        "Accept-Encoding: gzip, deflate\r\n"
    ).encode("latin-1")
    return _Target((host, port, tls), host, port, tls, head)
