"""A scriptable OpenAI-compatible chat completions server on 127.0.0.1, for judge/endpoint tests.

A real HTTP/1.1 server (stdlib asyncio only, so tests need no optional dependency), bound to a
random free port on 127.0.0.1 and run on its own event loop in a background thread. Clients talk
to it over real sockets, so retries, timeouts, dropped connections and the connection pool are
exercised for real.

What a request gets back, in order:

1. the next reply queued with `JudgeServer.script(...)`, if any;
2. otherwise the `handler` given to the server: ``handler(request)`` returns a `Reply`, a str (a
   chat answer with that text), a dict (a 200 JSON body) or an awaitable of one of those;
3. otherwise a chat answer ``"PASS"``.

Every request is recorded (`JudgeServer.requests`, with the parsed JSON body), and the server
tracks the most requests it ever held at once (`JudgeServer.max_in_flight`), so a test can assert
that a client never exceeded its concurrency limit.

Faults: `error(429, retry_after=...)`, `error(500)`, a `Reply(delay=...)` past the client's
timeout, `malformed()` bodies, `DROP` (close the socket without answering) and a 400 that
mentions ``response_format``.

Usage (the `judge_server` fixture in ``conftest.py`` does the start and stop)::

    with JudgeServer(lambda request: "PASS") as server:
        server.script(error(429, retry_after=2), chat('{"verdict": "PASS"}'))
        ...  # point a client at server.base_url

Run as a program it serves one canned answer after a fixed latency, for benchmarks that need
the server in its own process (`bench/judge_throughput.py`)::

    python tests/support/judge_server.py --latency 0.05  # prints its port; stops when stdin closes
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import inspect
import json
import ssl
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, Union

__all__ = [
    "DROP",
    "Handler",
    "JudgeServer",
    "Reply",
    "Request",
    "chat",
    "chat_body",
    "error",
    "malformed",
]


@dataclass(frozen=True)
class Reply:
    """What the server sends back for one request.

    Attributes:
        status: HTTP status code.
        json: JSON body (used when ``body`` is None).
        body: Raw body bytes, sent as they are (for malformed answers).
        headers: Extra response headers (e.g. ``Retry-After``).
        delay: Seconds to wait before answering (or before dropping).
        drop: Close the connection without answering.
        close: Close the connection after answering.
        raw: The whole HTTP answer as bytes (status line, headers, body), sent as is: for
            chunked, close-delimited or compressed answers. Wins over the other fields.
    """

    status: int = 200
    json: Any = None
    body: bytes | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0
    drop: bool = False
    close: bool = False
    raw: bytes | None = None


DROP = Reply(drop=True)
"""Close the connection without sending a response."""


@dataclass
class Request:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]  # names lowercased
    body: bytes
    received_at: float  # time.monotonic()

    @property
    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.body)


HandlerResult = Union[Reply, str, Mapping[str, Any]]  # noqa: UP007 - a runtime alias on 3.10
Handler = Callable[[Request], Union[HandlerResult, Awaitable[HandlerResult]]]  # noqa: UP007

LogprobSpec = Sequence[tuple[str, float, Sequence[tuple[str, float]]]]


def chat_body(
    text: str,
    *,
    prompt_tokens: int = 10,
    completion_tokens: int = 5,
    logprobs: LogprobSpec | None = None,
    model: str = "judge-test",
    system_fingerprint: str | None = None,
) -> dict[str, Any]:
    """An OpenAI chat completion JSON body.

    Args:
        text: The message content.
        prompt_tokens: Reported prompt tokens.
        completion_tokens: Reported completion tokens.
        logprobs: ``[(token, logprob, [(alternative, logprob), ...]), ...]``.
        model: The model name reported.
        system_fingerprint: The backend fingerprint reported (left out when None).
    """
    choice: dict[str, Any] = {
        "index": 0,
        "message": {"role": "assistant", "content": text},
        "finish_reason": "stop",
    }
    if logprobs is not None:
        choice["logprobs"] = {
            "content": [
                {
                    "token": token,
                    "logprob": logprob,
                    "bytes": list(token.encode()),
                    "top_logprobs": [
                        {"token": alt, "logprob": alt_lp, "bytes": list(alt.encode())}
                        for alt, alt_lp in top
                    ],
                }
                for token, logprob, top in logprobs
            ]
        }
    body = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [choice],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }
    if system_fingerprint is not None:
        body["system_fingerprint"] = system_fingerprint
    return body


def chat(text: str, *, delay: float = 0.0, **fields: Any) -> Reply:
    """A 200 chat completion answer; ``fields`` go to `chat_body`."""
    return Reply(json=chat_body(text, **fields), delay=delay)


def error(
    status: int,
    message: str = "simulated failure",
    *,
    retry_after: str | float | None = None,
    param: str | None = None,
    delay: float = 0.0,
) -> Reply:
    """An OpenAI-shaped error answer, with an optional ``Retry-After`` header."""
    headers = {} if retry_after is None else {"Retry-After": str(retry_after)}
    body = {"error": {"message": message, "type": "test_error", "param": param, "code": None}}
    return Reply(status=status, json=body, headers=headers, delay=delay)


def malformed(status: int = 200) -> Reply:
    """A body that is not JSON."""
    return Reply(status=status, body=b'{"choices": [{"message": ')


class JudgeServer:
    """An OpenAI-compatible chat completions server on 127.0.0.1, in a background thread.

    Args:
        handler: Answers requests when no scripted reply is queued.
        record: Keep every request in `requests` (off only for benchmarks).
        ssl_context: Serve HTTPS with this server-side context.
    """

    def __init__(
        self,
        handler: Handler | None = None,
        *,
        record: bool = True,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.handler = handler
        self.record = record
        self.ssl_context = ssl_context
        self.requests: list[Request] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.connections_opened = 0
        self._queue: collections.deque[Reply] = collections.deque()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.base_events.Server | None = None
        self._connections: set[_Connection] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self.port = 0

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """The OpenAI base URL of this server (``http://127.0.0.1:PORT/v1``)."""
        scheme = "http" if self.ssl_context is None else "https"
        return f"{scheme}://127.0.0.1:{self.port}/v1"

    def start(self) -> JudgeServer:
        """Bind a free port and serve in a background thread; returns self."""
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                self._server = loop.run_until_complete(
                    loop.create_server(
                        lambda: _Connection(self), "127.0.0.1", 0, ssl=self.ssl_context
                    )
                )
            except BaseException as exc:  # pragma: no cover - reported to start()
                failure.append(exc)
                ready.set()
                loop.close()
                return
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            try:
                loop.run_forever()
            finally:
                loop.run_until_complete(self._shutdown())
                loop.close()

        self._thread = threading.Thread(target=run, name="judge-server", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            raise failure[0]
        return self

    def stop(self) -> None:
        """Close every connection, cancel pending answers and join the thread."""
        if self._thread is None or self._loop is None:
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._thread = None

    async def _shutdown(self) -> None:
        assert self._server is not None
        self._server.close()
        for connection in list(self._connections):
            connection.transport_close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    def __enter__(self) -> JudgeServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- scripting -------------------------------------------------------------------------

    def script(self, *replies: HandlerResult) -> None:
        """Queue replies for the next requests, in order (a str is a chat answer, a dict a
        200 JSON body)."""
        with self._lock:
            self._queue.extend(_as_reply(reply) for reply in replies)

    @property
    def open_connections(self) -> int:
        """Connections currently open (clients that closed theirs are gone)."""
        return len(self._connections)

    @property
    def chat_requests(self) -> list[Request]:
        """The recorded POSTs to ``/v1/chat/completions``."""
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def reset(self) -> None:
        """Forget recorded requests, the in-flight maximum and queued replies."""
        with self._lock:
            self.requests.clear()
            self._queue.clear()
            self.max_in_flight = self.in_flight

    # -- serving (server thread) -----------------------------------------------------------

    async def _answer(self, request: Request) -> Reply:
        with self._lock:
            queued = self._queue.popleft() if self._queue else None
        if queued is not None:
            return queued
        if self.handler is None:
            return chat("PASS")
        result = self.handler(request)
        if inspect.isawaitable(result):
            result = await result
        return _as_reply(result)


def _as_reply(result: object) -> Reply:
    if isinstance(result, Reply):
        return result
    if isinstance(result, str):
        return chat(result)
    if isinstance(result, Mapping):
        return Reply(json=dict(result))
    raise TypeError(f"a judge server handler returned {result!r}; return a Reply, str or dict")


def _encode(reply: Reply, *, close: bool) -> bytes:
    body = reply.body if reply.body is not None else json.dumps(reply.json).encode()
    try:
        reason = HTTPStatus(reply.status).phrase
    except ValueError:
        reason = "Status"
    head = [
        f"HTTP/1.1 {reply.status} {reason}",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
    ]
    head.extend(f"{name}: {value}" for name, value in reply.headers.items())
    if close:
        head.append("Connection: close")
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


class _Connection(asyncio.Protocol):
    """One client connection: parses HTTP/1.1 requests and answers them one at a time."""

    def __init__(self, server: JudgeServer) -> None:
        self.server = server
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        self.busy = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.server._connections.add(self)
        self.server.connections_opened += 1

    def connection_lost(self, exc: Exception | None) -> None:
        self.server._connections.discard(self)
        transport, self.transport = self.transport, None
        if transport is not None and not transport.is_closing():
            transport.close()  # Python 3.10's TLS transport warns as unclosed otherwise

    def transport_close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if not self.busy:
            self._next_request()

    def _next_request(self) -> None:
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            return
        lines = bytes(self.buffer[:end]).decode("latin-1").split("\r\n")
        method, path, version = lines[0].split(" ", 2)
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        if len(self.buffer) < end + 4 + length:
            return
        body = bytes(self.buffer[end + 4 : end + 4 + length])
        del self.buffer[: end + 4 + length]
        connection = headers.get("connection", "").lower()
        close = connection == "close" or (version == "HTTP/1.0" and connection != "keep-alive")
        request = Request(method, path, headers, body, time.monotonic())
        self.busy = True
        server = self.server
        server.in_flight += 1
        server.max_in_flight = max(server.max_in_flight, server.in_flight)
        if server.record:
            with server._lock:
                server.requests.append(request)
        task = asyncio.get_running_loop().create_task(self._serve(request, close))
        server._tasks.add(task)
        task.add_done_callback(server._tasks.discard)

    async def _serve(self, request: Request, close: bool) -> None:
        try:
            if "chunked" in request.headers.get("transfer-encoding", ""):
                reply = error(411, "this test server needs Content-Length request bodies")
            else:
                reply = await self.server._answer(request)
            if reply.delay:
                await asyncio.sleep(reply.delay)
        except Exception as exc:  # a broken handler is a 500 that names it, not a hang
            reply = error(500, f"test server handler failed: {type(exc).__name__}: {exc}")
        finally:
            self.server.in_flight -= 1
        transport = self.transport
        if transport is None:
            return
        if reply.drop:
            transport.close()
            return
        close = close or reply.close
        transport.write(reply.raw if reply.raw is not None else _encode(reply, close=close))
        if close:
            transport.close()
            return
        self.busy = False
        if self.buffer:
            self._next_request()


# -- a separate-process server for benchmarks ----------------------------------------------


class _StaticConnection(asyncio.Protocol):
    """Bench mode: one canned answer after a fixed latency, with as little work as possible."""

    def __init__(self, answer: bytes, latency: float, stats: list[int]) -> None:
        self.answer = answer
        self.latency = latency
        self.stats = stats  # [served, in_flight, max_in_flight]
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buffer[:end].lower()
            start = head.find(b"content-length:")
            length = 0 if start < 0 else int(head[start + 15 : head.find(b"\r\n", start)])
            if len(self.buffer) < end + 4 + length:
                return
            self.buffer = self.buffer[end + 4 + length :]
            stats = self.stats
            stats[1] += 1
            if stats[1] > stats[2]:
                stats[2] = stats[1]
            asyncio.get_running_loop().call_later(self.latency, self._respond)

    def _respond(self) -> None:
        self.stats[0] += 1
        self.stats[1] -= 1
        if self.transport is not None:
            self.transport.write(self.answer)


async def _serve_static(latency: float, text: str) -> None:
    reply = chat(text)
    answer = _encode(reply, close=False)
    stats = [0, 0, 0]
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: _StaticConnection(answer, latency, stats), "127.0.0.1", 0, backlog=2048
    )
    print(server.sockets[0].getsockname()[1], flush=True)
    # The parent ends the server by closing our stdin (or by killing the process).
    await loop.run_in_executor(None, sys.stdin.read)
    server.close()
    print(json.dumps({"served": stats[0], "max_in_flight": stats[2]}), flush=True)


def main(argv: Iterable[str] | None = None) -> None:
    """Serve one canned chat answer after a fixed latency until stdin closes."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.05, help="seconds before answering")
    parser.add_argument("--text", default="PASS", help="the answer's message content")
    args = parser.parse_args(None if argv is None else list(argv))
    asyncio.run(_serve_static(args.latency, args.text))


if __name__ == "__main__":
    main()
