"""The default HTTP sender and the sender choice, against real loopback servers."""

from __future__ import annotations

import asyncio
import gzip
import json
import logging
import shutil
import ssl
import subprocess
from pathlib import Path

import pytest

from gradewire import InvalidInputError
from gradewire.http import _senders as _http_senders
from gradewire.http._fast_http import FastHttpSender
from gradewire.http._retry import RetryableError
from gradewire.http._senders import HttpxPoolSender, default_sender
from support.judge_server import JudgeServer, Reply, chat, chat_body

USER = [{"role": "user", "content": "grade"}]
BODY = json.dumps(chat_body("PASS")).encode()


def raw(head: str, body: bytes) -> Reply:
    return Reply(raw=head.replace("\n", "\r\n").encode() + b"\r\n" + body)


async def test_chunked_answers_with_extensions_and_trailers(judge_server, make_judge):
    half = len(BODY) // 2
    chunks = (
        f"{half:x};name=value\r\n".encode()
        + BODY[:half]
        + f"\r\n{len(BODY) - half:X}\r\n".encode()
        + BODY[half:]
        + b"\r\n0\r\nX-Trailer: yes\r\n\r\n"
    )
    judge_server.script(
        raw(
            "HTTP/1.1 200 OK\nTransfer-Encoding: chunked\nContent-Type: application/json\n", chunks
        ),
        chat("again"),
    )
    model = make_judge()
    assert (await model.complete(USER)).text == "PASS"
    assert (await model.complete([{"role": "user", "content": "2"}])).text == "again"
    assert judge_server.connections_opened == 1  # the chunked answer left it reusable


async def test_answers_read_until_the_server_closes(judge_server, make_judge):
    judge_server.script(
        Reply(raw=b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + BODY, close=True),
        chat("next"),
    )
    model = make_judge()
    assert (await model.complete(USER)).text == "PASS"
    assert (await model.complete([{"role": "user", "content": "2"}])).text == "next"
    assert judge_server.connections_opened == 2


async def test_gzip_answers_are_decoded(judge_server, make_judge):
    packed = gzip.compress(BODY)
    judge_server.script(
        raw(f"HTTP/1.1 200 OK\nContent-Encoding: gzip\nContent-Length: {len(packed)}\n", packed)
    )
    assert (await make_judge().complete(USER)).text == "PASS"
    assert "gzip" in judge_server.chat_requests[0].headers["accept-encoding"]


async def test_informational_answers_are_skipped(judge_server, make_judge):
    judge_server.script(
        raw(
            "HTTP/1.1 100 Continue\n\nHTTP/1.1 103 Early Hints\nLink: </x>\n\n"
            f"HTTP/1.1 200 OK\nContent-Length: {len(BODY)}\n",
            BODY,
        )
    )
    assert (await make_judge().complete(USER)).text == "PASS"


async def test_connection_close_is_honoured(judge_server, make_judge):
    judge_server.script(Reply(json=chat_body("one"), headers={"Connection": "close"}, close=True))
    model = make_judge()
    await model.complete(USER)
    await model.complete([{"role": "user", "content": "2"}])
    assert judge_server.connections_opened == 2


async def test_sequential_calls_reuse_one_connection(judge_server, make_judge):
    model = make_judge()
    for i in range(5):
        await model.complete([{"role": "user", "content": str(i)}])
    assert judge_server.connections_opened == 1


async def test_idle_connections_are_not_reused_past_their_time(
    judge_server, make_judge, monkeypatch
):
    monkeypatch.setattr("gradewire.http._fast_http._IDLE_SECONDS", 0.0)
    model = make_judge()
    await model.complete(USER)
    await model.complete([{"role": "user", "content": "2"}])
    assert judge_server.connections_opened == 2


async def test_the_request_is_well_formed(judge_server, make_judge):
    await make_judge(base_url=judge_server.base_url + "/x?tag=a%20b").complete(USER)
    [request] = judge_server.requests
    assert request.path == "/v1/x?tag=a%20b/chat/completions"  # sent as written
    assert request.headers["host"] == f"127.0.0.1:{judge_server.port}"
    assert request.headers["user-agent"] == "gradewire"
    assert int(request.headers["content-length"]) == len(request.body)
    assert request.json["messages"] == USER


async def test_malformed_http_is_a_retryable_failure(judge_server):
    judge_server.script(Reply(raw=b"HELLO THERE\r\n\r\n", close=True))
    sender = FastHttpSender()
    with pytest.raises(RetryableError, match="malformed HTTP answer"):
        await sender.post(judge_server.base_url + "/chat/completions", b"{}", {}, 5.0)
    await sender.aclose()


async def test_a_cancelled_call_closes_its_connection(judge_server, make_judge):
    judge_server.handler = lambda request: chat("late", delay=5.0)
    model = make_judge()
    call = asyncio.ensure_future(model.complete(USER))
    while judge_server.in_flight == 0:
        await asyncio.sleep(0.01)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    for _ in range(500):
        if judge_server.open_connections == 0:
            break
        await asyncio.sleep(0.01)
    assert judge_server.open_connections == 0


async def test_a_waiting_call_is_sent_before_the_answered_one_resumes(judge_server, make_judge):
    # One slot: the second call waits for it. The slot and the connection go to it the moment
    # the first answer is read, so its request is out before the first caller resumes (at
    # hundreds in flight, that keeps the slots busy while the loop processes the answers).
    model = make_judge(max_concurrency=1)
    events: list[str] = []
    sender_post = FastHttpSender.post

    async def post(self: FastHttpSender, url: str, body: bytes, *args: object) -> object:
        events.append(f"sent {json.loads(body)['messages'][0]['content']}")
        return await sender_post(self, url, body, *args)  # type: ignore[arg-type]

    async def call(name: str) -> None:
        await model.complete([{"role": "user", "content": name}])
        events.append(f"{name} resumed")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(FastHttpSender, "post", post)
        await asyncio.gather(call("first"), call("second"))
    assert events == ["sent first", "sent second", "first resumed", "second resumed"]
    assert judge_server.connections_opened == 1  # the second took the first's connection


async def test_a_call_cancelled_between_its_answer_and_its_resumption_leaves_the_pool_whole(
    judge_server,
):
    # The answer is whole and the connection is back in the pool; the caller is cancelled
    # before it resumes. The connection is the pool's by then: it is not closed, and the next
    # call reuses it.
    sender = FastHttpSender()
    url = judge_server.base_url + "/chat/completions"
    task: asyncio.Task[object] | None = None

    def cancel_the_caller() -> None:
        assert task is not None
        task.cancel()

    task = asyncio.ensure_future(sender.post(url, BODY, {}, 5.0, on_answer=cancel_the_caller))
    with pytest.raises(asyncio.CancelledError):
        await task
    status, _, body = await sender.post(url, BODY, {}, 5.0)
    assert status == 200
    assert json.loads(body) == json.loads(BODY)
    assert judge_server.connections_opened == 1
    assert judge_server.open_connections == 1
    await sender.aclose()


async def test_on_answer_is_called_once_the_answer_is_whole_and_never_on_a_failure(judge_server):
    sender = FastHttpSender()
    url = judge_server.base_url + "/chat/completions"
    called: list[int] = []
    await sender.post(url, BODY, {}, 5.0, on_answer=lambda: called.append(1))
    assert called == [1]
    judge_server.script(Reply(raw=b"HELLO THERE\r\n\r\n", close=True))
    with pytest.raises(RetryableError):
        await sender.post(url, BODY, {}, 5.0, on_answer=lambda: called.append(2))
    judge_server.handler = lambda request: chat("late", delay=5.0)
    with pytest.raises(RetryableError, match="timeout"):
        await sender.post(url, BODY, {}, 0.2, on_answer=lambda: called.append(3))
    assert called == [1]
    await sender.aclose()


def test_bad_urls_are_refused():
    sender = FastHttpSender()
    with pytest.raises(InvalidInputError, match="http:// or https://"):
        asyncio.run(sender.post("ftp://host/v1/chat/completions", b"{}", {}, 1.0))


@pytest.fixture(scope="module")
def certificate(tmp_path_factory) -> tuple[Path, Path]:
    openssl = shutil.which("openssl")
    assert openssl, "the TLS tests need the openssl command to make a test certificate"
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
            "-addext", "subjectAltName=IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


def tls_server(certificate: tuple[Path, Path]) -> JudgeServer:
    cert, key = certificate
    server_side = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_side.load_cert_chain(cert, key)
    return JudgeServer(ssl_context=server_side)


async def test_https(certificate):
    with tls_server(certificate) as server:
        url = server.base_url + "/chat/completions"
        assert url.startswith("https://")
        sender = FastHttpSender(ssl.create_default_context(cafile=str(certificate[0])))
        status, _, body = await sender.post(url, b"{}", {}, 5.0)
        await sender.aclose()
    assert status == 200
    assert json.loads(body)["choices"][0]["message"]["content"] == "PASS"


async def test_https_checks_the_certificate(certificate):
    with tls_server(certificate) as server:
        sender = FastHttpSender(ssl.create_default_context())  # does not know the test CA
        with pytest.raises(RetryableError, match="SSL"):
            await sender.post(server.base_url + "/chat/completions", b"{}", {}, 5.0)
        await sender.aclose()
        assert server.requests == []


def test_a_proxy_in_the_environment_selects_httpx(monkeypatch, caplog):
    for name in ("NO_PROXY", "no_proxy", "HTTP_PROXY", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(_http_senders, "_announced_proxy", False)
    assert isinstance(default_sender("http://judge.example/v1/chat/completions", 5), FastHttpSender)
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.example:3128")
    with caplog.at_level(logging.INFO, logger="gradewire"):
        chosen = default_sender("http://judge.example/v1/chat/completions", 5)
        default_sender("http://judge.example/v1/chat/completions", 5)
    assert isinstance(chosen, HttpxPoolSender)
    assert caplog.text.count("go through httpx") == 1  # said once
    monkeypatch.setenv("NO_PROXY", "judge.example")
    assert isinstance(default_sender("http://judge.example/v1/chat/completions", 5), FastHttpSender)


async def test_calls_go_through_the_proxy_the_environment_names(
    judge_server, make_judge, monkeypatch
):
    # The loopback server plays the proxy: httpx sends it the absolute URL.
    for name in ("NO_PROXY", "no_proxy", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{judge_server.port}")
    model = make_judge(base_url="http://judge.invalid/v1", max_concurrency=4)
    answers = await asyncio.gather(
        *(model.complete([{"role": "user", "content": str(i)}]) for i in range(8))
    )
    assert [a.text for a in answers] == ["PASS"] * 8
    paths = {r.path for r in judge_server.requests}
    assert paths == {"http://judge.invalid/v1/chat/completions"}
    assert judge_server.max_in_flight <= 4
    assert judge_server.connections_opened <= 4  # one client per slot, each kept alive


def test_the_client_runs_on_uvloop(judge_server):
    """uvloop's transports are not asyncio.Transport subclasses; Ray's workers, vLLM and
    uvicorn run on it, so the judge client must too."""
    import uvloop

    from gradewire.models import OpenAIChatModel

    async def ask() -> list[str]:
        model = OpenAIChatModel("judge", base_url=judge_server.base_url, max_attempts=1)
        answers = [await model.complete([{"role": "user", "content": str(i)}]) for i in range(3)]
        return [a.text for a in answers]

    judge_server.script("one", "two", "three")
    assert uvloop.run(ask()) == ["one", "two", "three"]
    assert judge_server.connections_opened == 1
