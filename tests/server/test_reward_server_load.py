"""The reward server under hostile or heavy load, over real sockets on 127.0.0.1.

Idle and slow connections, more samples than the server grades at once, completions of
megabytes, and requests aiohttp cannot parse.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from gradewire import BaseGrader, CommandGrader, StringThread
from gradewire.server._log_limit import LogLimiter
from support.reward_server_helpers import running

TESTS = Path(__file__).resolve().parent.parent  # where support/custom_graders.py is found
THREAD = {"turns": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}
TOKEN = "the-real-token-3f9a"


def constant(grader_key: str = "const", **options: object) -> BaseGrader:
    return BaseGrader.from_function(grader_key, lambda sample: 1.0, **options)  # type: ignore[arg-type]


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


async def exchange(port: int, raw: bytes, *, wait: float = 5.0) -> bytes:
    """Send ``raw`` on a new connection; everything the server sends until it closes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(raw)
        await writer.drain()
        return await asyncio.wait_for(reader.read(), wait)
    finally:
        writer.close()


def grade_request(*, keep_alive: bool = False) -> bytes:
    body = json.dumps({"thread": THREAD}).encode()
    close = "" if keep_alive else "Connection: close\r\n"
    head = (
        f"POST /v1/grade HTTP/1.1\r\nHost: localhost\r\n{close}"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def closed_by_server(reader: asyncio.StreamReader, within: float) -> bool:
    """Whether the server closes the connection within ``within`` seconds."""
    try:
        await asyncio.wait_for(reader.read(), within)  # whatever is left, then end of file
        return True
    except asyncio.TimeoutError:
        return False
    except ConnectionError:
        return True


# --- timeouts and the connection cap --------------------------------------------------------


async def test_a_connection_that_sends_no_complete_head_is_closed():
    async with running(constant(), header_timeout=0.5) as url:
        silent = await asyncio.open_connection("127.0.0.1", port_of(url))
        trickle = await asyncio.open_connection("127.0.0.1", port_of(url))
        trickle[1].write(b"POST /v1/grade HTTP/1.1\r\nHost: localhost\r\n")
        started = time.monotonic()
        for _ in range(3):  # a header line every 0.2 s does not extend the deadline
            await asyncio.sleep(0.2)
            trickle[1].write(b"X-Slow: 1\r\n")
        assert await closed_by_server(silent[0], 2.0)
        assert await closed_by_server(trickle[0], 2.0)
        assert time.monotonic() - started < 2.0
        for _, writer in (silent, trickle):
            writer.close()


async def test_the_head_deadline_starts_again_with_each_request_and_spares_slow_graders():
    async def slow(sample: StringThread) -> float:
        await asyncio.sleep(1.0)  # longer than the head deadline: it must not count
        return 1.0

    grader = BaseGrader.from_function("slow", slow)
    async with (
        running(grader, header_timeout=0.5) as url,
        httpx.AsyncClient(base_url=url) as client,
    ):
        for _ in range(2):
            answer = await client.post("/v1/grade", json={"thread": THREAD})
            assert answer.status_code == 200
            await asyncio.sleep(0.7)  # idle past the head deadline: keep-alive still holds


async def test_an_idle_keepalive_connection_is_closed_after_the_keepalive_timeout():
    async with running(constant(), keepalive_timeout=0.5) as url:
        reader, writer = await asyncio.open_connection("127.0.0.1", port_of(url))
        writer.write(grade_request(keep_alive=True))
        assert (await reader.readline()).startswith(b"HTTP/1.1 200")
        assert await closed_by_server(reader, 3.0)
        writer.close()


async def test_a_body_that_does_not_arrive_in_time_is_a_408():
    async with running(constant(), body_timeout=0.5) as url:
        reader, writer = await asyncio.open_connection("127.0.0.1", port_of(url))
        writer.write(
            b"POST /v1/grade HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            b"Content-Length: 1000\r\n\r\n{"
        )
        status = await asyncio.wait_for(reader.readline(), 5)
        assert status.startswith(b"HTTP/1.1 408")
        writer.close()


async def test_a_client_that_does_not_read_its_answer_is_cut_off():
    grader = constant(sample_tables=True)
    completion = StringThread([("user", "q"), ("assistant", "x" * 9000)])
    await grader.grade_many([completion] * 3000)  # /v1/logs: about 27 MB
    async with running(grader, body_timeout=0.5, max_log_bytes=None) as url:
        reader, writer = await asyncio.open_connection("127.0.0.1", port_of(url))
        writer.write(b"GET /v1/logs HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
        length = int(re.search(rb"Content-Length: (\d+)", head).group(1))  # type: ignore[union-attr]
        writer.transport.pause_reading()  # then reads nothing for longer than the timeout
        await asyncio.sleep(2.0)
        writer.transport.resume_reading()
        received = b""
        with contextlib.suppress(ConnectionError):
            received = await asyncio.wait_for(reader.read(), 10)
        writer.close()
    assert length > 20_000_000
    assert len(received) < length  # the server gave up on it and closed the connection


async def test_at_the_limit_the_connection_idle_the_longest_makes_room():
    async with running(constant(), max_connections=4) as url:
        port = port_of(url)
        idle = [await asyncio.open_connection("127.0.0.1", port) for _ in range(4)]
        await asyncio.sleep(0.1)
        answer = await exchange(port, grade_request())
        assert answer.startswith(b"HTTP/1.1 200")
        assert await closed_by_server(idle[0][0], 2.0)  # the oldest idle one
        for _, writer in idle:
            writer.close()


async def test_silent_connections_make_room_before_a_client_between_two_requests():
    async with running(constant(), max_connections=4) as url:
        port = port_of(url)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(grade_request(keep_alive=True))
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
        assert head.startswith(b"HTTP/1.1 200")
        length = int(re.search(rb"Content-Length: (\d+)", head, re.IGNORECASE)[1])  # type: ignore[index]
        await reader.readexactly(length)
        await asyncio.sleep(0.1)  # now idle longer than any of the silent ones below
        silent = [await asyncio.open_connection("127.0.0.1", port) for _ in range(3)]
        await asyncio.sleep(0.1)
        # One more at the limit: the oldest silent connection goes, not the keep-alive one
        # that has been idle the longest.
        assert (await exchange(port, grade_request())).startswith(b"HTTP/1.1 200")
        assert await closed_by_server(silent[0][0], 2.0)
        writer.write(grade_request())  # the keep-alive client goes on, on the same connection
        await writer.drain()
        assert (await asyncio.wait_for(reader.read(), 5)).startswith(b"HTTP/1.1 200")
        for _, other in [*silent, (reader, writer)]:
            other.close()


async def test_when_every_connection_is_busy_a_new_one_gets_a_503():
    release = asyncio.Event()

    async def wait(sample: StringThread) -> float:
        await release.wait()
        return 1.0

    async with running(BaseGrader.from_function("wait", wait), max_connections=2) as url:
        port = port_of(url)
        busy = [asyncio.ensure_future(exchange(port, grade_request(), wait=10)) for _ in range(2)]
        await asyncio.sleep(0.3)
        refused = await exchange(port, grade_request())
        assert refused.startswith(b"HTTP/1.1 503")
        assert b"Retry-After: 1" in refused
        assert "--max-connections" in json.loads(refused.split(b"\r\n\r\n", 1)[1])["error"]
        release.set()
        for answer in await asyncio.gather(*busy):
            assert answer.startswith(b"HTTP/1.1 200")


def test_lines_past_the_burst_are_counted_and_reported(caplog: pytest.LogCaptureFixture):
    now = [0.0]
    limiter = LogLimiter(logging.getLogger("gradewire"), burst=2, period=10.0, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="gradewire"):
        for i in range(50):
            limiter.log("refused", logging.WARNING, "line %d", i)
        assert [r.getMessage() for r in caplog.records] == ["line 0", "line 1"]
        now[0] = 11.0
        limiter.log("refused", logging.WARNING, "line %d", 50)
        limiter.log("other", logging.WARNING, "another kind")
        limiter.flush()
    messages = [r.getMessage() for r in caplog.records]
    assert messages[2:] == [
        "gradewire serve: 48 more refused lines left out in the last 11 s",
        "line 50",
        "another kind",
    ]


# --- 2,000 idle and slow connections against a 1,024 file limit -----------------------------

ATTACKERS = 2000
SERVER_FILES = 1024


@contextlib.asynccontextmanager
async def cli_server(tmp_path: Path, *options: str) -> AsyncIterator[tuple[int, Path]]:
    """``gradewire serve`` in its own process, with an open-file limit of 1,024."""
    spec = tmp_path / "graders.json"
    spec.write_text(
        json.dumps(
            {
                "graders": [
                    {
                        "type": "custom",
                        "key": "len",
                        "function": "support.custom_graders:length_score",
                    }
                ]
            }
        )
    )
    log = tmp_path / "server.log"
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    # The limit is set in the server's own process before it starts serving.
    limited = (
        "import os, resource, sys; "
        f"resource.setrlimit(resource.RLIMIT_NOFILE, ({SERVER_FILES}, {SERVER_FILES})); "
        "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])"
    )
    command = [sys.executable, "-c", limited, "-m", "gradewire", "serve", str(spec)]
    command += ["--port", "0", *options]
    with log.open("wb") as err:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=err, env=env)
    try:
        assert process.stdout is not None
        line = await asyncio.to_thread(process.stdout.readline)
        found = re.search(rb"127\.0\.0\.1:(\d+)", line)
        assert found, line
        yield int(found.group(1)), log
    finally:
        process.terminate()
        process.wait(timeout=30)
        if process.stdout is not None:
            process.stdout.close()


@pytest.fixture
def many_files() -> int:
    """Raise this process's open-file limit for the attackers' sockets (as far as allowed)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = ATTACKERS + 500
    if hard != resource.RLIM_INFINITY and hard < wanted:
        pytest.skip(f"the hard open-file limit ({hard}) is below the {wanted} this test needs")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, wanted), hard))
    yield ATTACKERS
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


async def test_two_thousand_idle_and_slow_connections_lock_nobody_out(
    tmp_path: Path, many_files: int
):
    async with cli_server(tmp_path, "--header-timeout", "3") as (port, log):
        attackers: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        for i in range(many_files):
            try:
                pair = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                continue  # a connection closed to make room may be refused a reconnect
            if i % 2:
                pair[1].write(b"POST /v1/grade HTTP/1.1\r\nHost: localhost\r\n")  # then stall
            attackers.append(pair)
        assert len(attackers) > many_files * 0.9
        # A normal client is served at once beside them.
        started = time.monotonic()
        answer = await exchange(port, grade_request(), wait=5)
        assert answer.startswith(b"HTTP/1.1 200")
        assert time.monotonic() - started < 2.0
        # Within twice the head deadline, the server has closed every one of them.
        closed = await asyncio.gather(*(closed_by_server(r, 8.0) for r, _ in attackers))
        assert all(closed)
        for _, writer in attackers:
            writer.close()
        assert (await exchange(port, grade_request(), wait=5)).startswith(b"HTTP/1.1 200")
    # The log says what happened in a few lines, not a traceback per refused accept.
    text = log.read_text()
    assert "Traceback" not in text
    assert len(text) < 5_000


# --- one server-wide cap on samples being graded ----------------------------------------------


async def test_concurrent_batches_share_the_servers_cap():
    in_flight = peak = 0

    async def tracked(sample: StringThread) -> float:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.02)
        in_flight -= 1
        return 1.0

    grader = BaseGrader.from_function("tracked", tracked)
    batch = {"threads": [THREAD] * 64}
    async with (
        running(grader, max_concurrency=64) as url,
        httpx.AsyncClient(base_url=url, timeout=60) as client,
    ):
        answers = await asyncio.gather(
            *(client.post("/v1/grade_batch", json=batch) for _ in range(10))
        )
    assert {a.status_code for a in answers} == {200}
    assert all(g["grade"]["value"] == 1.0 for a in answers for g in a.json()["grades"])
    assert peak == 64


async def test_a_small_request_does_not_wait_for_a_big_batch_to_finish():
    order: list[str] = []

    async def record(sample: StringThread) -> float:
        await asyncio.sleep(0.02)
        order.append(sample.completion() or "")
        return 1.0

    grader = BaseGrader.from_function("record", record)
    big_thread = {"turns": [THREAD["turns"][0], {"role": "assistant", "content": "big"}]}
    async with (
        running(grader, max_concurrency=4) as url,
        httpx.AsyncClient(base_url=url, timeout=60) as client,
    ):
        batch = asyncio.ensure_future(
            client.post("/v1/grade_batch", json={"threads": [big_thread] * 200})
        )
        while len(order) < 8:
            await asyncio.sleep(0.01)
        sent_at = len(order)
        small = await client.post("/v1/grade", json={"thread": THREAD})
        assert small.status_code == 200
        assert (await batch).status_code == 200
    # The small sample queued behind the batch's four waiting workers, not its 190 samples.
    assert order.index("a") < sent_at + 40
    assert len(order) == 201


async def test_ten_batches_to_a_command_grader_run_no_more_processes_than_the_cap(tmp_path: Path):
    marker = tmp_path / "running"
    marker.mkdir()
    # Each process leaves a file while it runs; the peak number of files is the peak of
    # processes running at once.
    command = 'f=$(mktemp -p "$DIR"); sleep 0.3; ls "$DIR" | wc -l >> "$DIR/../counts"; rm "$f"'
    grader = CommandGrader("bash", command, env={"DIR": str(marker)})
    batch = {"threads": [THREAD] * 16}
    async with (
        running(grader, max_concurrency=8) as url,
        httpx.AsyncClient(base_url=url, timeout=120) as client,
    ):
        answers = await asyncio.gather(
            *(client.post("/v1/grade_batch", json=batch) for _ in range(5))
        )
    assert all(g["grade"]["value"] == 1.0 for a in answers for g in a.json()["grades"])
    counts = [int(n) for n in (tmp_path / "counts").read_text().split()]
    assert len(counts) == 80
    assert max(counts) <= 8


# --- memory: megabyte completions ------------------------------------------------------------


async def test_megabyte_completions_keep_a_bounded_log_and_a_bounded_logs_answer():
    grader = constant(sample_tables=True)
    bound = 1024 * 1024
    big = "x" * (4 * 1024 * 1024)
    thread = {"turns": [{"role": "user", "content": "q"}, {"role": "assistant", "content": big}]}
    async with (
        running(grader, max_log_bytes=bound) as url,
        httpx.AsyncClient(base_url=url, timeout=60) as client,
    ):
        for _ in range(20):
            answer = await client.post("/v1/grade", json={"thread": thread})
            assert answer.status_code == 200
        kept = sum(len(v) for record in grader._logs for v in record.values() if isinstance(v, str))
        assert kept < bound
        logs = await client.get("/v1/logs")
    assert len(logs.content) < 2 * bound
    figures = logs.json()["graders"]["const"]
    assert figures["score/count"] == 20  # every sample counted, whatever the tables keep
    completion = figures["score/scored_samples"]["data"][-1][1]
    assert completion.startswith("xxx")
    assert "chars cut" in completion
    assert len(completion) <= 10_000


async def test_the_logs_answer_keeps_the_newest_rows_that_fit_and_says_how_many_it_left():
    grader = constant(sample_tables=True)
    samples = [StringThread([("user", f"q{i}"), ("assistant", "y" * 5000)]) for i in range(100)]
    await grader.grade_many(samples, max_concurrency=1)
    async with (
        running(grader, max_log_bytes=100_000) as url,
        httpx.AsyncClient(base_url=url) as client,
    ):
        answer = (await client.get("/v1/logs")).json()
    rows = answer["graders"]["const"]["score/scored_samples"]["data"]
    assert 0 < len(rows) < 100
    assert rows[-1][0] == "q99"
    assert answer["rows_left_out"] == {"const": {"score/scored_samples": 100 - len(rows)}}


# --- aiohttp's own 400 answers ---------------------------------------------------------------

MALFORMED = {
    "bad Content-Length": (
        f"POST /v1/grade HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {TOKEN}x\r\n"
        "Content-Length: 12abc\r\n\r\n"
    ).encode(),
    "NUL in Authorization": (
        f"GET /v1/logs HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {TOKEN}\0\r\n\r\n"
    ).encode(),
    "header line too long": (
        f"GET /v1/logs HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {TOKEN}{'a' * 9000}"
        "\r\n\r\n"
    ).encode(),
    "two Content-Lengths": (
        f"POST /v1/grade HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {TOKEN}\r\n"
        "Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello"
    ).encode(),
    "broken Content-Encoding": (
        f"POST /v1/grade HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {TOKEN}\r\n"
        "Content-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: 5\r\n\r\n"
        "hello"
    ).encode(),
}


@pytest.mark.parametrize("case", list(MALFORMED))
async def test_malformed_http_gets_json_that_never_echoes_a_header(
    case: str, caplog: pytest.LogCaptureFixture
):
    grader = constant()
    with caplog.at_level(logging.DEBUG):
        async with running(grader, token=TOKEN) as url:
            answer = await exchange(port_of(url), MALFORMED[case])
    head, _, body = answer.partition(b"\r\n\r\n")
    assert re.match(rb"HTTP/1\.[01] 400 ", head), head
    assert b"Content-Type: application/json" in head
    assert (
        "malformed" in json.loads(body)["error"] or "could not be read" in json.loads(body)["error"]
    )
    assert TOKEN.encode() not in answer
    assert TOKEN not in caplog.text
    assert "Traceback" not in caplog.text
    assert grader.get_logs() == {}


async def test_a_parser_error_handed_to_the_middlewares_is_answered_without_its_text():
    # aiohttp 4 passes parser errors through the middlewares as an HTTPBadRequest whose
    # text quotes the offending header; the answer must not.
    from aiohttp import http_exceptions, web
    from aiohttp.test_utils import TestClient, TestServer

    from gradewire.server import create_app

    async def parser_error(request: web.Request) -> web.Response:
        error = web.HTTPBadRequest(text=f"Invalid header value char: b'Bearer {TOKEN}\\x00'")
        error.__cause__ = http_exceptions.BadHttpMessage(f"b'Bearer {TOKEN}\\x00'")
        raise error

    app = create_app(constant())
    app.router.add_get("/parser-error", parser_error)
    async with TestClient(TestServer(app)) as client:
        answer = await client.get("/parser-error")
        text = await answer.text()
    assert answer.status == 400
    assert TOKEN not in text
    assert "malformed HTTP request" in json.loads(text)["error"]
