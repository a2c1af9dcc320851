"""The reward server against hostile or broken clients, over real HTTP on 127.0.0.1.

Cross-site requests and DNS rebinding against a token-less server, input that used to reach
a 500 and a traceback, and the bound on what the served graders keep in memory.
"""

from __future__ import annotations

import asyncio
import json
import logging

import httpx
import pytest

from gradewire import BaseGrader, InvalidInputError, StringThread, Table
from gradewire.server import ServerSettings, create_app
from gradewire.server._hosts import is_loopback_host, is_loopback_origin
from gradewire.specs._factory import build_grader
from support.reward_server_helpers import running

JSON = {"Content-Type": "application/json"}
THREAD = StringThread([("user", "Say it"), ("assistant", "yes")], {"label": "yes"})
GRADE = {"grader": "label", "thread": THREAD.to_dict()}


def label(**fields) -> BaseGrader:
    spec = {"type": "custom", "key": "label", "function": "support.custom_graders:label_match"}
    return build_grader({**spec, **fields}, trust_code=True)


def port_of(url: str) -> str:
    return url.rsplit(":", 1)[1]


# --- cross-site requests and DNS rebinding -----------------------------------------------


@pytest.mark.parametrize(
    "content_type",
    [None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; b=x"],
)
async def test_a_post_that_is_not_json_is_refused_unread(content_type):
    # These are what a web page can send with no CORS preflight (a form, a plain fetch).
    grader = label()
    headers = {} if content_type is None else {"Content-Type": content_type}
    async with running([grader]) as url, httpx.AsyncClient(base_url=url) as client:
        for path in ["/v1/grade", "/v1/grade_batch", "/get_reward", "/v1/logs/clear"]:
            answer = await client.post(path, content=json.dumps(GRADE), headers=headers)
            assert answer.status_code == 415, path
            error = answer.json()["error"]
            assert "'Content-Type: application/json'" in error
            assert (repr(content_type) if content_type else "no Content-Type") in error
        assert grader.get_logs() == {}  # nothing was graded
        charset = await client.post(
            "/v1/grade",
            content=json.dumps(GRADE),
            headers={"Content-Type": "Application/JSON; charset=utf-8"},
        )
        assert charset.status_code == 200
        assert charset.json()["grade"]["value"] == 1.0


async def test_clearing_the_logs_takes_a_json_post():
    grader = label()
    async with running([grader]) as url, httpx.AsyncClient(base_url=url) as client:
        assert (await client.post("/v1/grade", json=GRADE)).status_code == 200
        assert (await client.get("/v1/logs?clear=1")).status_code == 422
        assert (await client.post("/v1/logs/clear")).status_code == 415  # no Content-Type
        assert (await client.post("/v1/logs/clear", content="x", headers={})).status_code == 415
        assert grader.get_logs()["score/count"] == 1  # still there
        cleared = await client.post("/v1/logs/clear", headers=JSON)
        assert cleared.json()["graders"]["label"]["score/count"] == 1
        assert grader.get_logs() == {}
        assert (await client.get("/v1/logs/clear")).status_code == 405


@pytest.mark.parametrize(
    "host",
    ["evil.example", "evil.example:{port}", "127.0.0.1.nip.io:{port}", "localhost.evil.example"],
)
async def test_without_a_token_a_foreign_host_name_is_refused(host):
    grader = label()
    async with running([grader]) as url, httpx.AsyncClient(base_url=url) as client:
        host = host.format(port=port_of(url))
        for method, path in [("POST", "/v1/grade"), ("GET", "/v1/logs"), ("GET", "/v1/graders")]:
            answer = await client.request(
                method, path, content=json.dumps(GRADE), headers={**JSON, "Host": host}
            )
            assert answer.status_code == 403, (method, path)
            error = answer.json()["error"]
            assert f"[::1] (this request: Host {host!r})" in error
            assert "with a token" in error
            assert "to serve other hosts" in error
        # A health probe addresses a pod by its IP; the answer tells a page nothing.
        assert (await client.get("/health", headers={"Host": host})).status_code == 200
        assert grader.get_logs() == {}


async def test_without_a_token_a_request_without_host_is_refused():
    async with running([label()]) as url:
        reader, writer = await asyncio.open_connection("127.0.0.1", int(port_of(url)))
        writer.write(b"GET /v1/graders HTTP/1.0\r\n\r\n")
        answer = await reader.read()
        writer.close()
        await writer.wait_closed()
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith((b"HTTP/1.0 403", b"HTTP/1.1 403"))
    assert "(this request: no Host header)" in json.loads(body)["error"]


async def test_without_a_token_loopback_host_names_are_served():
    async with running([label()]) as url, httpx.AsyncClient(base_url=url) as client:
        port = port_of(url)
        for host in [f"127.0.0.1:{port}", f"localhost:{port}", "LOCALHOST", f"[::1]:{port}"]:
            answer = await client.post("/v1/grade", json=GRADE, headers={"Host": host})
            assert answer.status_code == 200, host
            assert answer.json()["grade"]["value"] == 1.0


@pytest.mark.parametrize(
    "origin", ["https://evil.example", "null", "http://127.0.0.1.nip.io", "file://"]
)
async def test_without_a_token_a_request_from_another_site_is_refused(origin):
    grader = label()
    async with running([grader]) as url, httpx.AsyncClient(base_url=url) as client:
        answer = await client.post("/v1/grade", json=GRADE, headers={"Origin": origin})
        assert answer.status_code == 403
        assert f"web page at {origin!r}" in answer.json()["error"]
        assert "to serve other hosts" in answer.json()["error"]
        local = await client.post(
            "/v1/grade", json=GRADE, headers={"Origin": "http://localhost:8888"}
        )
        assert local.status_code == 200
    assert grader.get_logs()["score/count"] == 1


async def test_without_a_token_listed_host_names_are_served():
    # A trainer on another machine that cannot send a token (OpenRLHF) names the server so.
    async with (
        running([label()], allowed_hosts=["RM-Node-1", "10.0.0.5", "fd00::7"]) as url,
        httpx.AsyncClient(base_url=url) as client,
    ):
        for host in ["rm-node-1:8000", "RM-NODE-1", "10.0.0.5:80", "[fd00::7]:1", "localhost"]:
            answer = await client.post("/v1/grade", json=GRADE, headers={"Host": host})
            assert answer.status_code == 200, host
        for host in ["rm-node-2", "10.0.0.6", "rm-node-1.evil.example"]:
            refused = await client.post("/v1/grade", json=GRADE, headers={"Host": host})
            assert refused.status_code == 403, host
            assert (
                "[::1], 10.0.0.5, [fd00::7], rm-node-1 (this request: Host"
                in refused.json()["error"]
            )
            assert "--allow-host" in refused.json()["error"]
        page = await client.post(
            "/v1/grade",
            json=GRADE,
            headers={"Host": "rm-node-1", "Origin": "http://rm-node-1"},
        )
        assert page.status_code == 403  # a web page is refused even from a listed name


@pytest.mark.parametrize("names", [["http://rm-node"], ["rm-node:8000"], [""], ["a b"], [3]])
def test_listed_host_names_are_checked(names):
    with pytest.raises(InvalidInputError, match="allowed_hosts"):
        create_app([label()], allowed_hosts=names)


async def test_with_a_token_any_host_is_served():
    async with (
        running([label()], token="tok") as url,
        httpx.AsyncClient(base_url=url, headers={"Authorization": "Bearer tok"}) as client,
    ):
        answer = await client.post(
            "/v1/grade",
            json=GRADE,
            headers={"Host": "rm.cluster.internal:8000", "Origin": "https://dash.example"},
        )
        assert answer.status_code == 200
        unauthenticated = await client.post(
            "/v1/grade", json=GRADE, headers={"Host": "evil.example", "Authorization": ""}
        )
        assert unauthenticated.status_code == 401


@pytest.mark.parametrize(
    ("value", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.1:8000", True),
        ("localhost:1", True),
        ("[::1]:80", True),
        ("127.0.0.2", True),
        ("::1", False),  # unbracketed: not how a Host header carries IPv6
        ("[::2]", False),
        ("127.1", False),
        ("localhost:http", False),
        ("localhost:123456", False),
        ("", False),
        ("10.0.0.1:8000", False),
    ],
)
def test_loopback_host_values(value, loopback):
    assert is_loopback_host(value) is loopback
    assert is_loopback_origin(f"http://{value}") is loopback
    assert not is_loopback_origin(value)
    assert not is_loopback_origin(f"http://{value}/path")


# --- bad input is a 4xx, with at most one log line --------------------------------------


async def test_a_non_ascii_authorization_header_is_a_401_without_a_traceback(caplog):
    caplog.set_level(logging.DEBUG, logger="gradewire")
    async with (
        running([label()], token="tok") as url,
        httpx.AsyncClient(base_url=url) as client,
    ):
        for value in [
            b"Bearer \xe9\xff",
            "Bearer tök".encode(),
            b"\xff\xfe tok",
            b"Bearer tok\x80",
        ]:
            answer = await client.post("/v1/grade", json=GRADE, headers={"Authorization": value})
            assert answer.status_code == 401, value
            assert "bearer token" in answer.json()["error"]
        good = await client.post("/v1/grade", json=GRADE, headers={"Authorization": "Bearer tok"})
        assert good.status_code == 200
    assert caplog.records == []


async def test_an_unforeseen_reading_failure_is_a_422_and_one_log_line(monkeypatch, caplog):
    # No real request is known to get here any more: a reader bug is simulated.
    def broken(cls, data):
        raise RuntimeError("reader bug\nsecond line")

    monkeypatch.setattr(StringThread, "from_dict", classmethod(broken))
    caplog.set_level(logging.DEBUG, logger="gradewire")
    async with running([label()]) as url, httpx.AsyncClient(base_url=url) as client:
        answer = await client.post("/v1/grade", json=GRADE)
    assert answer.status_code == 422
    assert "could not be read (RuntimeError: reader bug" in answer.json()["error"]
    [record] = caplog.records
    assert record.exc_info is None
    assert "\n" not in record.getMessage()
    assert "reader bug" in record.getMessage()


async def test_a_server_bug_logs_its_traceback_once_then_one_line_per_request(monkeypatch, caplog):
    import gradewire.server._app as app

    def broken(outcome):
        raise RuntimeError("answer bug")

    monkeypatch.setattr(app, "outcome_answer", broken)
    caplog.set_level(logging.DEBUG, logger="gradewire")
    async with running([label()]) as url, httpx.AsyncClient(base_url=url) as client:
        for _ in range(3):
            answer = await client.post("/v1/grade", json=GRADE)
            assert answer.status_code == 500
            assert answer.json()["error"] == "internal error (RuntimeError); see the server log"
    assert len(caplog.records) == 3
    assert [r.exc_info is not None for r in caplog.records] == [True, False, False]
    assert all("\n" not in r.getMessage() for r in caplog.records)


# --- bounded grader logs ------------------------------------------------------------------


def test_the_server_bounds_the_logs_of_graders_that_keep_everything():
    unbounded, own, sub = label(), label(key="own"), label(key="sub")
    own.max_log_records = 50
    combined = build_grader(
        {
            "type": "combined",
            "key": "both",
            "graders": [
                {"type": "custom", "key": "a", "function": "support.custom_graders:length_score"},
                {"type": "custom", "key": "b", "function": "support.custom_graders:label_match"},
            ],
        },
        trust_code=True,
    )
    create_app([unbounded, own, combined])
    assert unbounded.max_log_records == ServerSettings().max_log_records == 10_000
    assert own.max_log_records == 50  # a grader's own bound wins
    assert combined.max_log_records == 10_000
    assert [g.max_log_records for g in combined.graders] == [10_000, 10_000]
    create_app([sub], max_log_records=None)
    assert sub.max_log_records is None
    create_app([sub], max_log_records=7)
    assert sub.max_log_records == 7


@pytest.mark.parametrize("value", [0, 1, -5, True, 2.5, "100"])
def test_a_bad_log_bound_is_refused_before_any_grader_changes(value):
    grader = label()
    with pytest.raises(InvalidInputError, match="max_log_records must be an int >= 2"):
        create_app([grader], max_log_records=value)
    assert grader.max_log_records is None


async def test_memory_stays_bounded_over_many_requests_and_figures_stay_exact():
    cap = 10
    grader = label(sample_tables=True)
    threads = [
        StringThread([("user", "q"), ("assistant", f"a{i}")], {"label": "a0"}) for i in range(7)
    ]
    async with (
        running([grader], max_log_records=cap) as url,
        httpx.AsyncClient(base_url=url) as client,
    ):
        for _ in range(40):  # 280 records in all
            answer = await client.post(
                "/v1/grade_batch", json={"threads": [t.to_dict() for t in threads]}
            )
            assert answer.status_code == 200
            assert len(grader._logs) <= cap
        logs = (await client.get("/v1/logs")).json()["graders"]["label"]
    assert logs["score/count"] == 280
    assert logs["score/mean"] == pytest.approx(40 / 280)
    recent = Table.from_dict(logs["score/scored_samples"]).column("Completion")
    assert 0 < len(recent) <= cap  # tables show the most recent samples only
    assert recent[-1] == "a6"
