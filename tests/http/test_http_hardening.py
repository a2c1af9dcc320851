"""The HTTP/1.1 client against malformed, oversized and slow answers from real loopback servers.

Most answers are sent byte for byte by `judge_server` (``Reply(raw=...)``); where a test needs
to control the socket itself (an answer that never ends), it runs its own asyncio server.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import socket
import struct
import threading
import time
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx
import pytest

from gradewire import ModelCallError
from gradewire.http._fast_http import DEFAULT_MAX_RESPONSE_BYTES, FastHttpSender
from gradewire.http._retry import ModelHTTPError, RetryableError
from support.judge_server import DROP, JudgeServer, Reply, chat, chat_body

USER = [{"role": "user", "content": "grade"}]
BODY = json.dumps(chat_body("PASS")).encode()
# Generous: a test that passes never waits for it; one that regresses fails in this time.
TIMEOUT = 5.0


def raw(head: str, body: bytes = b"", *, newline: str = "\r\n") -> Reply:
    """An answer written as is: ``head`` lines (each ending in ``\\n``) joined by ``newline``."""
    return Reply(raw=head.replace("\n", newline).encode("latin-1") + newline.encode() + body)


@pytest.fixture
async def sender() -> AsyncIterator[FastHttpSender]:
    opened = FastHttpSender()
    yield opened
    await opened.aclose()


def url_of(server: JudgeServer) -> str:
    return server.base_url + "/chat/completions"


# -- Content-Length ---------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["-3", "+8", "8_0", " 0x8", "8 8", "", "8, 9"])
async def test_an_invalid_content_length_is_a_protocol_error(judge_server, sender, value):
    judge_server.script(raw(f"HTTP/1.1 200 OK\nContent-Length: {value}\n", BODY))
    with pytest.raises(RetryableError, match="Content-Length"):
        await sender.post(url_of(judge_server), b"{}", {}, TIMEOUT)


async def test_two_content_length_headers_that_differ_are_a_protocol_error(judge_server, sender):
    n = len(BODY)
    judge_server.script(raw(f"HTTP/1.1 200 OK\nContent-Length: {n}\nContent-Length: {n + 1}\n"))
    with pytest.raises(RetryableError, match="Content-Length"):
        await sender.post(url_of(judge_server), b"{}", {}, TIMEOUT)


async def test_repeated_identical_content_lengths_are_accepted(judge_server, sender):
    n = len(BODY)
    judge_server.script(
        raw(f"HTTP/1.1 200 OK\nContent-Length: {n}, {n}\n", BODY),
        raw(f"HTTP/1.1 200 OK\nContent-Length: {n}\ncontent-length: {n}\n", BODY),
    )
    for _ in range(2):
        status, _, body = await sender.post(url_of(judge_server), b"{}", {}, TIMEOUT)
        assert (status, body) == (200, BODY)
    assert judge_server.connections_opened == 1  # both answers left the connection reusable


async def test_a_protocol_error_closes_its_connection(judge_server, make_judge):
    # The server keeps the connection open after the bad answer, whose body is whole: the
    # client must still drop the connection rather than pool it.
    judge_server.script(
        raw(f"HTTP/1.1 200 OK\nContent-Length: +{len(BODY)}\n", BODY), chat("second")
    )
    answer = await make_judge().complete(USER)  # the failure is retried, on a new connection
    assert answer.text == "second"
    assert judge_server.connections_opened == 2
    assert len(judge_server.chat_requests) == 2


# -- the head ---------------------------------------------------------------------------------


async def test_a_head_with_bare_lf_line_ends_is_read(judge_server, sender):
    judge_server.script(
        raw(f"HTTP/1.1 200 OK\nContent-Length: {len(BODY)}\nX-Note: lf\n", BODY, newline="\n"),
        raw(f"HTTP/1.1 200 OK\r\nContent-Length: {len(BODY)}\nX-Note: mixed\n", BODY, newline="\n"),
    )
    for note in ("lf", "mixed"):
        status, headers, body = await sender.post(url_of(judge_server), b"{}", {}, TIMEOUT)
        assert (status, headers["x-note"], body) == (200, note, BODY)


@pytest.mark.parametrize(
    "chunks",
    [
        b"%x\n" % len(BODY) + BODY + b"\r\n0\r\n\r\n",  # a chunk-size line ending in LF
        b"%x\r\n" % len(BODY) + BODY + b"\n0\r\n\r\n",  # chunk data followed by LF
    ],
)
async def test_chunk_lines_need_crlf(judge_server, sender, chunks):
    # RFC 9112 allows a bare LF in the head only (section 2.2); h11 holds chunks to CRLF.
    answer = raw("HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n", chunks, newline="\n")
    assert answer.raw is not None
    assert h11_reading(answer.raw)[0].startswith("refused")
    judge_server.script(answer)
    with pytest.raises(RetryableError, match=r"malformed HTTP answer.*(chunk|CRLF)"):
        await sender.post(url_of(judge_server), b"{}", {}, TIMEOUT)


@pytest.mark.parametrize(
    "head",
    [
        "HTTP/1.1 2000 OK\nContent-Length: 0\n",
        "HTTP/1.1 +20 OK\nContent-Length: 0\n",
        "HTTP/1.1 200 OK\nno colon here\nContent-Length: 0\n",
        "HTTP/1.1 200 OK\nTransfer-Encoding: gzip, chunked\n",
    ],
)
async def test_a_malformed_head_is_a_protocol_error(judge_server, sender, head):
    judge_server.script(raw(head))
    with pytest.raises(RetryableError, match="malformed HTTP answer"):
        await sender.post(url_of(judge_server), b"{}", {}, TIMEOUT)


# -- chunk sizes ------------------------------------------------------------------------------


@pytest.mark.parametrize("size_line", [b"-3", b"0x10", b"zz", b"1_0", b" -1;x=y"])
async def test_a_chunk_size_that_is_not_hex_is_a_protocol_error(judge_server, sender, size_line):
    chunks = size_line + b"\r\n" + BODY[:16] + b"\r\n0\r\n\r\n"
    judge_server.script(raw("HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n", chunks))
    with pytest.raises(RetryableError, match="chunk"):
        await sender.post(url_of(judge_server), b"{}", {}, TIMEOUT)


async def test_chunk_data_longer_than_its_size_is_a_protocol_error(judge_server, sender):
    chunks = b"4\r\n" + BODY[:16] + b"\r\n0\r\n\r\n"
    judge_server.script(raw("HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n", chunks))
    with pytest.raises(RetryableError, match="chunk"):
        await sender.post(url_of(judge_server), b"{}", {}, TIMEOUT)


Handle = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@contextlib.asynccontextmanager
async def raw_server(handle: Handle) -> AsyncIterator[str]:
    """A server on 127.0.0.1 whose ``handle`` writes bytes as it likes; yields the URL.

    On exit, handlers still running are cancelled and every socket is closed.
    """
    tasks: set[asyncio.Task[None]] = set()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        tasks.add(task)
        try:
            await handle(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            # The client hung up (what the tests provoke), or the test is over: a handler
            # ending as cancelled would have asyncio log an error.
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/v1/chat/completions"
    finally:
        server.close()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await server.wait_closed()


def answer_then_hold(answer: bytes) -> Handle:
    """Reads one request, writes ``answer``, then holds the socket open without a word."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(answer)
        await writer.drain()
        await asyncio.Event().wait()  # only a client-side check can end the answer

    return handle


async def test_a_partial_garbage_chunk_size_fails_at_once(sender):
    # No line end ever comes: waiting for one would stall until the timeout.
    answer = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-"

    async with raw_server(answer_then_hold(answer)) as url:
        with pytest.raises(RetryableError, match="chunk"):
            await sender.post(url, b"{}", {}, TIMEOUT)


# -- the size cap -----------------------------------------------------------------------------


async def test_a_content_length_over_the_cap_fails_before_the_body_comes(sender):
    # The server announces 10 MB and sends none of it: the head alone decides.
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: 10000000\r\n\r\n"

    async with raw_server(answer_then_hold(answer)) as url:
        with pytest.raises(ModelHTTPError, match="max_response_bytes=1000") as caught:
            await sender.post(url, b"{}", {}, TIMEOUT, max_response_bytes=1000)
    assert "10000000" in str(caught.value)
    assert caught.value.status == 200


async def test_a_chunked_answer_over_the_cap_is_refused(judge_server, sender):
    chunks = b"".join(b"%x\r\n" % 400 + b"x" * 400 + b"\r\n" for _ in range(3)) + b"0\r\n\r\n"
    judge_server.script(raw("HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n", chunks))
    with pytest.raises(ModelHTTPError, match="max_response_bytes=1000"):
        await sender.post(url_of(judge_server), b"{}", {}, TIMEOUT, max_response_bytes=1000)


async def test_an_answer_read_to_the_close_over_the_cap_is_refused(sender):
    answer = b"HTTP/1.0 200 OK\r\n\r\n" + b"x" * 5000  # no length: read until the close

    async with raw_server(answer_then_hold(answer)) as url:
        with pytest.raises(ModelHTTPError, match="max_response_bytes=1000"):
            await sender.post(url, b"{}", {}, TIMEOUT, max_response_bytes=1000)


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
async def test_a_compression_bomb_is_refused_by_its_decoded_size(judge_server, sender, encoding):
    plain = b"0" * 2_000_000
    packed = gzip.compress(plain) if encoding == "gzip" else zlib.compress(plain)
    assert len(packed) < 10_000  # small on the wire: only the decoded size can tell
    judge_server.script(
        raw(
            f"HTTP/1.1 200 OK\nContent-Encoding: {encoding}\nContent-Length: {len(packed)}\n",
            packed,
        )
    )
    with pytest.raises(ModelHTTPError, match="decode") as caught:
        await sender.post(url_of(judge_server), b"{}", {}, TIMEOUT, max_response_bytes=100_000)
    assert "max_response_bytes=100000" in str(caught.value)


async def test_compressed_answers_under_the_cap_are_decoded(judge_server, sender):
    packed = zlib.compress(BODY)
    judge_server.script(
        raw(f"HTTP/1.1 200 OK\nContent-Encoding: deflate\nContent-Length: {len(packed)}\n", packed)
    )
    status, _, body = await sender.post(url_of(judge_server), b"{}", {}, TIMEOUT)
    assert (status, body) == (200, BODY)


async def test_a_truncated_gzip_body_is_a_protocol_error(judge_server, sender):
    packed = gzip.compress(BODY)[:-12]
    judge_server.script(
        raw(f"HTTP/1.1 200 OK\nContent-Encoding: gzip\nContent-Length: {len(packed)}\n", packed)
    )
    with pytest.raises(RetryableError, match="compressed"):
        await sender.post(url_of(judge_server), b"{}", {}, TIMEOUT)


async def test_the_model_does_not_retry_an_answer_over_its_cap(judge_server, make_judge):
    judge_server.handler = lambda request: chat("x" * 5000)
    model = make_judge(max_response_bytes=2000)
    with pytest.raises(ModelCallError, match="max_response_bytes=2000"):
        await model.complete(USER)
    assert len(judge_server.chat_requests) == 1  # refused, not retried
    assert (await make_judge(max_response_bytes=10_000).complete(USER)).text == "x" * 5000
    assert make_judge().max_response_bytes == DEFAULT_MAX_RESPONSE_BYTES == 64 * 1024 * 1024


@pytest.mark.parametrize("value", [0, -1, 1.5, True, "64"])
def test_the_model_checks_its_cap(judge_server, make_judge, value):
    with pytest.raises(ValueError, match="max_response_bytes"):
        make_judge(max_response_bytes=value)


# -- one deadline per attempt -----------------------------------------------------------------


async def drip(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Answers one byte every 0.2 s: each read comes well within any per-read timeout."""
    await reader.readuntil(b"\r\n\r\n")
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(BODY))
    for byte in BODY:
        writer.write(bytes([byte]))
        await writer.drain()
        await asyncio.sleep(0.2)


async def test_the_timeout_covers_the_whole_attempt(sender):
    async with raw_server(drip) as url:
        with pytest.raises(RetryableError, match="timeout of 1s"):
            await sender.post(url, b"{}", {}, 1.0)


async def test_the_timeout_covers_a_slowly_dripped_answer_through_httpx(make_judge):
    # httpx's own timeout bounds each read; a server dripping a byte at a time stays under it.
    async with raw_server(drip) as url, httpx.AsyncClient() as client:
        model = make_judge(
            base_url=url.removesuffix("/chat/completions"),
            http_client=client,
            attempt_timeout=1.0,
            max_attempts=1,
        )
        with pytest.raises(ModelCallError, match="timeout of 1s"):
            await model.complete(USER)


async def test_httpx_senders_keep_the_cap(judge_server, make_judge, monkeypatch):
    judge_server.handler = lambda request: chat("x" * 5000)
    async with httpx.AsyncClient() as client:
        own = make_judge(http_client=client, max_response_bytes=2000)
        with pytest.raises(ModelCallError, match="max_response_bytes=2000"):
            await own.complete(USER)
    # The pool of httpx clients, taken when the environment names a proxy for the host.
    for name in ("NO_PROXY", "no_proxy", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{judge_server.port}")
    proxied = make_judge(base_url="http://judge.invalid/v1", max_response_bytes=2000)
    with pytest.raises(ModelCallError, match="max_response_bytes=2000"):
        await proxied.complete(USER)
    assert len(judge_server.chat_requests) == 2  # one each: refused, not retried


# -- RFC 9112 as h11 reads it: the five laxities a differential probe found ------------------


def h11_reading(answer: bytes) -> tuple[str, bool]:
    """What h11 (the parser under httpx) makes of ``answer`` to a POST: refused or read, and
    whether the connection could carry the next request."""
    import h11

    connection = h11.Connection(h11.CLIENT)
    connection.send(h11.Request(method="POST", target="/", headers=[("Host", "x")]))
    connection.send(h11.EndOfMessage())
    connection.receive_data(answer)
    try:
        while True:
            event = connection.next_event()
            if isinstance(event, h11.EndOfMessage):
                break
            if event is h11.NEED_DATA:
                return "incomplete", False
    except h11.RemoteProtocolError as exc:
        return f"refused: {exc}", False
    return "read", connection.their_state is h11.DONE


@pytest.mark.parametrize(
    "line",
    [
        b"Content-Length : 2",  # whitespace before the colon (RFC 9112 section 5.1)
        b"X(y): 1",  # "(" is not a token character
        b"X-Note: a\x00b",  # NUL inside a value (RFC 9110 section 5.5)
        b"X-Note: a\rb",  # a bare CR inside a value
    ],
)
async def test_header_lines_outside_the_grammar_are_refused(judge_server, sender, line):
    framing = b"" if line.startswith(b"Content-Length") else b"Content-Length: 2\r\n"
    answer = b"HTTP/1.1 200 OK\r\n" + line + b"\r\n" + framing + b"\r\nok"
    assert h11_reading(answer)[0].startswith("refused")
    # The server keeps the connection open: only the client can decide not to reuse it.
    judge_server.script(Reply(raw=answer), chat("next"))
    url = url_of(judge_server)
    with pytest.raises(RetryableError, match="malformed HTTP answer"):
        await sender.post(url, b"{}", {}, TIMEOUT)
    status, _, body = await sender.post(url, b"{}", {}, TIMEOUT)
    assert status == 200
    assert json.loads(body)["choices"][0]["message"]["content"] == "next"
    assert judge_server.connections_opened == 2  # the refused answer's connection was dropped


@pytest.mark.parametrize(
    "connection", ["keep-alive, close", "close, keep-alive", "Keep-Alive ,CLOSE", "x, close"]
)
async def test_close_anywhere_in_the_connection_list_ends_the_connection(
    judge_server, sender, connection
):
    answer = f"HTTP/1.1 200 OK\r\nConnection: {connection}\r\nContent-Length: 2\r\n\r\nok"
    assert h11_reading(answer.encode()) == ("read", False)
    judge_server.script(Reply(raw=answer.encode()), chat("next"))  # the server keeps it open
    url = url_of(judge_server)
    assert (await sender.post(url, b"{}", {}, TIMEOUT))[2] == b"ok"
    await sender.post(url, b"{}", {}, TIMEOUT)
    assert judge_server.connections_opened == 2


async def test_a_post_is_not_resent_when_a_kept_alive_connection_dies_unanswered(
    judge_server, sender
):
    # The server read the request, then closed without a word: it may have acted on it, so
    # sending it again is the caller's decision (RFC 9112 section 9.3.1), not the pool's.
    url = url_of(judge_server)
    await sender.post(url, b"{}", {}, TIMEOUT)  # leaves one idle connection
    judge_server.script(DROP)
    with pytest.raises(RetryableError, match="closed the connection"):
        await sender.post(url, b'{"n": 2}', {}, TIMEOUT)
    assert [r.body for r in judge_server.requests] == [b"{}", b'{"n": 2}']  # sent once


async def test_an_idle_connection_the_server_closed_unseen_is_not_used(
    judge_server, sender, monkeypatch
):
    # The server closes the connection after its answer. The loop is kept from reading that
    # close (as when it is busy), so the pool still holds the connection as alive when the
    # next request comes: a check of the socket must find the close before writing to it.
    monkeypatch.setattr("gradewire.http._fast_http._CHECK_AFTER_SECONDS", 0.0)
    close_after = Reply(raw=b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", close=True)
    judge_server.script(close_after, chat("next"))
    url = url_of(judge_server)
    assert (await sender.post(url, b"{}", {}, TIMEOUT))[2] == b"ok"
    time.sleep(0.3)  # blocks the loop: the close arrives meanwhile, unread
    _, _, body = await sender.post(url, b'{"n": 2}', {}, TIMEOUT)
    assert json.loads(body)["choices"][0]["message"]["content"] == "next"
    assert [r.body for r in judge_server.requests] == [b"{}", b'{"n": 2}']
    assert judge_server.connections_opened == 2


def read_request_body(conn: socket.socket) -> bytes:
    """Reads one request from a blocking socket; returns its body (Content-Length framed)."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += conn.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
    while len(body) < length:
        body += conn.recv(65536)
    return body


async def test_a_request_refused_at_its_first_byte_goes_again_on_a_new_connection(
    sender, monkeypatch
):
    # The server resets the kept-alive connection after its first answer; the loop has not
    # read the reset when the next request is written, and the socket check is skipped. The
    # write fails before one byte leaves: the request goes again at once, on a new connection.
    monkeypatch.setattr("gradewire.http._fast_http._CHECK_AFTER_SECONDS", 1e9)
    received: list[tuple[int, bytes]] = []
    listener = socket.create_server(("127.0.0.1", 0))
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

    def serve() -> None:  # a thread of its own: the test blocks the client's loop
        for number in (1, 2):
            conn, _ = listener.accept()
            with conn:
                received.append((number, read_request_body(conn)))
                conn.sendall(answer)
                if number == 1:
                    time.sleep(0.1)  # the answer is read before the reset
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                else:
                    conn.recv(1)  # until the client closes

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1/chat/completions"
    try:
        assert (await sender.post(url, b"{}", {}, TIMEOUT))[2] == b"ok"
        time.sleep(0.3)  # blocks the loop: the reset arrives meanwhile, unread
        assert (await sender.post(url, b"[]", {}, TIMEOUT))[2] == b"ok"
        await sender.aclose()
        server.join(TIMEOUT)
    finally:
        listener.close()
    assert received == [(1, b"{}"), (2, b"[]")]  # sent once, on the new connection


async def test_a_connection_answered_before_its_request_was_sent_is_not_reused(sender):
    # The server answers after the head and never reads the 8 MB body: the answer is whole
    # while the request is still being written, so the connection's state is unknown.
    connections = 0

    async def answer_early(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 413 Too Large\r\nContent-Length: 2\r\n\r\nno")
        await writer.drain()
        if connections == 1:
            await asyncio.Event().wait()  # holds the socket, reads nothing more
        await reader.read()

    async with raw_server(answer_early) as url:
        status, _, body = await sender.post(url, b"x" * 8_000_000, {}, TIMEOUT)
        assert (status, body) == (413, b"no")
        await sender.post(url, b"{}", {}, TIMEOUT)
    assert connections == 2
