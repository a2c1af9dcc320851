"""The reward server over real HTTP on 127.0.0.1, called by httpx and by EndpointGrader."""

from __future__ import annotations

import json
import math
import re
import sys

import httpx
import pytest

from gradewire import (
    BaseGrader,
    Grade,
    GradingError,
    IgnoreGradeException,
    InvalidInputError,
    MissingDependencyError,
    StringThread,
    Table,
)
from gradewire.http import RetryPolicy
from gradewire.http._retry import ModelHTTPError
from gradewire.server._hosts import is_loopback
from gradewire.server._server import create_app, serve
from gradewire.specs._factory import build_grader
from gradewire.tools._endpoint_grader import EndpointGrader
from support.reward_server_helpers import running

CUSTOM = "support.custom_graders:"


def custom(key: str, function: str, **fields) -> BaseGrader:
    spec = {"type": "custom", "key": key, "function": CUSTOM + function, **fields}
    return build_grader(spec, trust_code=True)


def sample(completion: str, label: str | None = None, prompt: str = "Say it") -> StringThread:
    metadata = {} if label is None else {"label": label}
    return StringThread([("user", prompt), ("assistant", completion)], metadata)


THREADS = [
    sample("yes", "yes"),
    sample("no", "yes"),
    sample("yes"),  # no label: label_match abstains
    sample("a longer answer", "a longer answer"),
    sample("boom", "boom"),
]


def graders() -> list[BaseGrader]:
    return [
        custom("label", "label_match"),
        custom("fragile", "explode_on_boom"),
        custom("length", "length_score", sample_tables=True),
    ]


JSON = {"Content-Type": "application/json"}


async def post(client: httpx.AsyncClient, path: str, body, **options) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    options["headers"] = {**JSON, **options.get("headers", {})}
    return await client.post(path, content=content, **options)


async def test_health_graders_and_unknown_routes():
    async with running(graders()) as url, httpx.AsyncClient(base_url=url) as client:
        assert (await client.get("/health")).json() == {"status": "ok"}
        listed = (await client.get("/v1/graders")).json()["graders"]
        assert [g["key"] for g in listed] == ["label", "fragile", "length"]
        assert listed[0]["spec"] == {
            "key": "label",
            "type": "custom",
            "function": "support.custom_graders:label_match",
            "factory": False,
            "options": {},
        }
        missing = await client.get("/v2/nothing")
        assert missing.status_code == 404
        assert "error" in missing.json()
        wrong_method = await client.get("/v1/grade")
        assert wrong_method.status_code == 405
        assert "error" in wrong_method.json()


async def test_grade_one_thread():
    async with running(graders()) as url, httpx.AsyncClient(base_url=url) as client:
        answer = await post(
            client, "/v1/grade", {"grader": "label", "thread": THREADS[0].to_dict()}
        )
        assert answer.status_code == 200
        body = answer.json()
        assert body["error"] is None
        assert body["abstained"] is False
        assert Grade.from_dict(body["grade"]) == Grade(1.0, "label")
        abstained = await post(
            client, "/v1/grade", {"grader": "label", "thread": THREADS[2].to_dict()}
        )
        assert abstained.json() == {
            "grade": None,
            "error": "grading function label_match() returned None",
            "abstained": True,
        }
        failed = await post(
            client, "/v1/grade", {"grader": "fragile", "thread": THREADS[4].to_dict()}
        )
        assert failed.status_code == 200
        assert failed.json()["error"] == "ValueError: boom in the completion"
        assert failed.json()["abstained"] is False


async def test_the_grader_may_be_left_out_when_there_is_one():
    async with (
        running([custom("only", "length_score")]) as url,
        httpx.AsyncClient(base_url=url) as client,
    ):
        answer = await post(client, "/v1/grade", {"thread": THREADS[3].to_dict()})
        assert answer.json()["grade"]["value"] == 1.0
    async with running(graders()) as url, httpx.AsyncClient(base_url=url) as client:
        answer = await post(client, "/v1/grade", {"thread": THREADS[3].to_dict()})
        assert answer.status_code == 422
        assert "name one in 'grader'" in answer.json()["error"]
        unknown = await post(
            client, "/v1/grade", {"grader": "nope", "thread": THREADS[0].to_dict()}
        )
        assert unknown.status_code == 422
        assert "no grader 'nope'" in unknown.json()["error"]


async def test_batch_results_equal_single_results_and_one_failure_never_fails_the_batch():
    async with running(graders()) as url, httpx.AsyncClient(base_url=url) as client:
        for key in ["label", "fragile", "length"]:
            batch = await post(
                client,
                "/v1/grade_batch",
                {"grader": key, "threads": [t.to_dict() for t in THREADS]},
            )
            assert batch.status_code == 200
            singles = [
                (await post(client, "/v1/grade", {"grader": key, "thread": t.to_dict()})).json()
                for t in THREADS
            ]
            assert batch.json()["grades"] == singles
        labels = [g["grade"] and g["grade"]["value"] for g in batch.json()["grades"]]
        assert labels == [0.3, 0.2, 0.3, 1.0, 0.4]
        fragile = (
            await post(
                client,
                "/v1/grade_batch",
                {"grader": "fragile", "threads": [t.to_dict() for t in THREADS]},
            )
        ).json()["grades"]
        assert [g["error"] for g in fragile] == [None] * 4 + ["ValueError: boom in the completion"]


async def test_logs_endpoint_and_clearing():
    served = graders()
    async with running(served) as url, httpx.AsyncClient(base_url=url) as client:
        await post(
            client,
            "/v1/grade_batch",
            {"grader": "length", "threads": [t.to_dict() for t in THREADS]},
        )
        await post(
            client,
            "/v1/grade_batch",
            {"grader": "label", "threads": [t.to_dict() for t in THREADS]},
        )
        logs = (await client.get("/v1/logs")).json()["graders"]
        assert logs["length"]["score/count"] == 5
        assert math.isclose(logs["length"]["score/mean"], (0.3 + 0.2 + 0.3 + 1.0 + 0.4) / 5)
        table = Table.from_dict(logs["length"]["score/scored_samples"])
        # Sync functions grade concurrently in worker threads: rows come in finishing order.
        assert sorted(table.column("Completion")) == sorted(t.completion() for t in THREADS)
        assert logs["label"]["score/abstained_count"] == 1
        assert logs["fragile"] == {}
        # GET only reads: a web page can make any browser send one.
        old_style = await client.get("/v1/logs", params={"clear": "true"})
        assert old_style.status_code == 422
        assert "POST /v1/logs/clear" in old_style.json()["error"]
        assert (await client.get("/v1/logs")).json()["graders"] == logs
        cleared = (await post(client, "/v1/logs/clear", b"")).json()["graders"]
        assert cleared == logs
        assert (await client.get("/v1/logs")).json()["graders"]["length"] == {}
        await post(client, "/v1/grade", {"grader": "length", "thread": THREADS[0].to_dict()})
        assert (await post(client, "/v1/logs/clear", {})).json()["graders"]["length"][
            "score/count"
        ] == 1
        fields = await post(client, "/v1/logs/clear", {"clear": True})
        assert fields.status_code == 422
        assert "takes no fields" in fields.json()["error"]


async def test_a_token_is_required_when_set():
    async with (
        running(graders(), token="s3cret-token") as url,
        httpx.AsyncClient(base_url=url) as client,
    ):
        body = {"grader": "label", "thread": THREADS[0].to_dict()}
        for headers in [{}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret-token"}]:
            refused = await post(client, "/v1/grade", body, headers=headers)
            assert refused.status_code == 401
            assert "bearer token" in refused.json()["error"]
            assert refused.headers["www-authenticate"].startswith("Bearer")
        assert (await client.get("/v1/graders")).status_code == 401
        assert (await client.get("/v1/logs")).status_code == 401
        assert (await client.get("/health")).status_code == 200
        good = await post(
            client, "/v1/grade", body, headers={"Authorization": "Bearer s3cret-token"}
        )
        assert good.status_code == 200
        assert good.json()["grade"]["value"] == 1.0


async def test_oversized_requests_are_refused_with_a_message():
    async with (
        running(graders(), max_body_bytes=2000, max_batch=3) as url,
        httpx.AsyncClient(base_url=url) as client,
    ):
        big = sample("x" * 5000, "x").to_dict()
        refused = await post(client, "/v1/grade", {"grader": "label", "thread": big})
        assert refused.status_code == 413
        assert "limit of 2000 bytes" in refused.json()["error"]

        async def chunks():  # no Content-Length: the cap holds while reading
            for _ in range(10):
                yield b" " * 500

        chunked = await client.post("/v1/grade", content=chunks(), headers=JSON)
        assert chunked.status_code == 413
        many = {"grader": "label", "threads": [THREADS[0].to_dict()] * 4}
        too_many = await post(client, "/v1/grade_batch", many)
        assert too_many.status_code == 413
        assert "over this server's limit of 3" in too_many.json()["error"]
        rewards = await post(client, "/get_reward?grader=label", {"query": ["a"] * 4})
        assert rewards.status_code == 413


@pytest.mark.parametrize(
    ("path", "body", "status", "message"),
    [
        ("/v1/grade", b"{not json", 400, "not valid JSON"),
        ("/v1/grade", b"", 400, "no body"),
        ("/v1/grade", [1, 2], 422, "not a JSON array"),
        ("/v1/grade", {"grader": "label"}, 422, "needs 'thread'"),
        ("/v1/grade", {"grader": "label", "threads": []}, 422, "unknown field 'threads'"),
        ("/v1/grade", {"grader": 3, "thread": {"turns": []}}, 422, "'grader' must be a string"),
        ("/v1/grade", {"grader": "label", "thread": "hi"}, 422, "StringThread.to_dict()"),
        (
            "/v1/grade",
            {"grader": "label", "thread": {"turns": 5}},
            422,
            r"'thread': 'turns' must be a list .* not a JSON number",
        ),
        (
            "/v1/grade_batch",
            {"grader": "label", "threads": [{"turns": None}]},
            422,
            r"threads\[0\]: 'turns' must be a list",
        ),
        ("/v1/grade", b"[" * 100_000 + b"]" * 100_000, 400, "nested too deeply"),
        (
            "/v1/grade",
            b'{"grader": "label", "thread": {"turns": [], "metadata": {"a": '
            + b"[" * 100_000
            + b"]" * 100_000
            + b"}}}",
            400,
            "nested too deeply",
        ),
        ("/get_reward?grader=label", b"[" * 100_000 + b"]" * 100_000, 400, "nested too deeply"),
        (
            "/v1/grade",
            {"grader": "label", "thread": {"turns": [{"role": "robot", "content": "x"}]}},
            422,
            "role 'robot'",
        ),
        ("/v1/grade_batch", {"grader": "label", "threads": {}}, 422, "needs 'threads'"),
        (
            "/v1/grade_batch",
            {"grader": "label", "threads": [{"turns": []}, {"turn": []}]},
            422,
            r"threads\[1\]",
        ),
        ("/get_reward?grader=label", {"query": "one"}, 422, "'query' must be a list"),
        (
            "/get_reward?grader=label",
            {"query": ["a", "b"], "prompts": ["a"]},
            422,
            "'prompts' has 1 items for 2 queries",
        ),
        (
            "/get_reward?grader=label",
            {"query": ["a"], "prompts": ["a"], "labels": "x"},
            422,
            "'labels' must be a list",
        ),
    ],
)
async def test_malformed_requests_get_a_4xx_that_says_why(path, body, status, message, caplog):
    async with running(graders()) as url, httpx.AsyncClient(base_url=url) as client:
        answer = await post(client, path, body)
        assert answer.status_code == status
        assert answer.headers["content-type"].startswith("application/json")
        assert re.search(message, answer.json()["error"]), answer.json()
    assert not [r for r in caplog.records if r.exc_info], "a bad request logged a traceback"


async def test_openrlhf_get_reward():
    async with (
        running(graders(), failure_value=-1.0) as url,
        httpx.AsyncClient(base_url=url) as client,
    ):
        body = {
            "query": ["Q1: yes", "Q2: no", "Q3: yes", "odd"],
            "prompts": ["Q1: ", "Q2: ", "Q3: ", "Q4: "],
            "labels": ["yes", "yes", None, "odd"],
            "metas": [{}, {}, {}, {}],  # sent by newer OpenRLHF; ignored
        }
        answer = (await post(client, "/get_reward?grader=label", body)).json()
        assert answer["rewards"] == [1.0, 0.0, -1.0, 1.0]
        assert answer["scores"] == answer["rewards"]
        assert answer["extra_logs"] == {
            "reward_abstained": [0.0, 0.0, 1.0, 0.0],
            "reward_failed": [0.0, 0.0, 0.0, 0.0],
            "prompt_not_in_query": [0.0, 0.0, 0.0, 1.0],
        }
        assert answer["errors"][2] == "grading function label_match() returned None"
        failing = (
            await post(client, "/get_reward", {"query": ["boom", "fine"], "grader": "fragile"})
        ).json()
        assert failing["rewards"] == [-1.0, 1.0]
        assert failing["extra_logs"]["reward_failed"] == [1.0, 0.0]


async def test_endpoint_grader_end_to_end(sleeps):
    served = graders()
    retry = RetryPolicy(sleep=sleeps)
    async with running(served, token="tok") as url:
        remote = EndpointGrader(
            "remote-label", f"{url}/v1/grade", token="tok", remote_grader="label", retry=retry
        )
        grades = await remote.grade_many(THREADS)
        assert [g and g.value for g in grades] == [1.0, 0.0, None, 1.0, 1.0]
        logs = remote.get_logs()
        assert logs["score/abstained_count"] == 1  # abstained over there: abstained here
        assert logs["score/count"] == 4
        assert served[0].get_logs()["score/count"] == 4  # the server's grader logged too

        fragile = EndpointGrader("f", f"{url}/v1/grade", token="tok", remote_grader="fragile")
        assert await fragile.grade_many(THREADS[-1:]) == [None]
        assert fragile.get_logs()["score/error_count"] == 1

        refused = EndpointGrader("r", f"{url}/v1/grade", remote_grader="label", retry=retry)
        assert await refused.grade_many(THREADS[:1]) == [None]
        assert refused.get_logs()["score/error_count"] == 1
        assert sleeps.delays == []  # a 401 is not retried
        for grader in (remote, fragile, refused):
            await grader.aclose()


@pytest.mark.parametrize(
    ("headers", "status", "advice"),
    [
        ({"Origin": "https://dash.example"}, 403, "--allow-host"),
        ({"Content-Type": "text/plain"}, 415, "check the headers= given to the grader"),
    ],
)
async def test_endpoint_grader_refused_by_the_server_says_why(sleeps, headers, status, advice):
    async with running(graders()) as url:
        remote = EndpointGrader(
            "r",
            f"{url}/v1/grade",
            remote_grader="label",
            headers=headers,
            retry=RetryPolicy(sleep=sleeps),
        )
        with pytest.raises(ModelHTTPError) as info:
            await remote.grade(THREADS[0])
        assert info.value.status == status
        assert advice in str(info.value)
        assert sleeps.delays == []  # a refusal is not retried
        await remote.aclose()


async def test_openrlhf_shape_round_trip():
    async with running(graders()) as url:
        remote = EndpointGrader(
            "rm", f"{url}/get_reward?grader=label", payload="openrlhf", retry=RetryPolicy(1)
        )
        grades = await remote.grade_many(THREADS)
        # The abstention over there comes back as failure_value (0.0) plus a flag: it is an
        # abstention here too, never a real 0.0 grade.
        assert [g and g.value for g in grades] == [1.0, 0.0, None, 1.0, 1.0]
        logs = remote.get_logs()
        assert (logs["score/count"], logs["score/abstained_count"]) == (4, 1)
        assert logs["score/error_count"] == 0
        await remote.aclose()


async def test_openrlhf_failures_and_abstentions_of_the_server_are_not_zeros():
    failing, abstaining = THREADS[4], THREADS[2]  # "boom" raises; no label returns None
    async with running(graders(), failure_value=0.0) as url:
        fragile = EndpointGrader(
            "rm", f"{url}/get_reward?grader=fragile", payload="openrlhf", retry=RetryPolicy(1)
        )
        with pytest.raises(GradingError, match="ValueError: boom in the completion"):
            await fragile.grade(failing)
        assert [g and g.value for g in await fragile.grade_many([failing, THREADS[0]])] == [
            None,
            1.0,
        ]
        assert fragile.get_logs()["score/error_count"] == 1
        label = EndpointGrader(
            "rm", f"{url}/get_reward?grader=label", payload="openrlhf", retry=RetryPolicy(1)
        )
        with pytest.raises(IgnoreGradeException, match=r"label_match\(\) returned None"):
            await label.grade(abstaining)
        assert await label.grade_many([abstaining]) == [None]
        logs = label.get_logs()
        assert logs["score/abstained_count"] == 1
        assert "score/mean" not in logs
        for grader in (fragile, label):
            await grader.aclose()


async def test_a_judge_grader_served_from_a_spec(judge_server, monkeypatch):
    monkeypatch.setenv("JUDGE_KEY", "k")
    judge_server.handler = lambda request: '{"reasoning": "fine", "verdict": "PASS"}'
    judge = build_grader(
        {
            "type": "binary_judge",
            "key": "helpful",
            "criteria": "Answers the question",
            "judge_model": {
                "model": "judge",
                "base_url": judge_server.base_url,
                "api_key_env": "JUDGE_KEY",
            },
        }
    )
    async with running([judge]) as url, httpx.AsyncClient(base_url=url) as client:
        batch = await post(client, "/v1/grade_batch", {"threads": [t.to_dict() for t in THREADS]})
        assert [g["grade"]["value"] for g in batch.json()["grades"]] == [1.0] * 5
        # Two threads differ only in metadata: the judge sees them as one identical call.
        assert len(judge_server.chat_requests) == len({t.turns for t in THREADS}) == 4
        listed = (await client.get("/v1/graders")).json()["graders"]
        assert listed[0]["spec"]["judge_model"]["api_key_env"] == "JUDGE_KEY"


async def test_non_finite_info_is_sent_as_strict_json():
    class Odd(BaseGrader):
        async def grade(self, sample: StringThread) -> Grade:
            return Grade(0.5, self.grader_key, info={"nan": float("nan"), "obj": object()})

    async with running([Odd("odd")]) as url, httpx.AsyncClient(base_url=url) as client:
        answer = await post(client, "/v1/grade", {"thread": THREADS[0].to_dict()})
        info = json.loads(answer.content, parse_constant=_refuse)["grade"]["info"]
        assert info["nan"] is None
        assert info["obj"].startswith("<object object")


def _refuse(name: str) -> None:
    raise AssertionError(f"{name} is not JSON")


async def test_a_non_loopback_host_needs_a_token():
    with pytest.raises(
        InvalidInputError, match=r"refusing to serve on '0\.0\.0\.0' without a token"
    ):
        await serve(graders(), host="0.0.0.0", port=0)
    assert is_loopback("127.0.0.1")
    assert is_loopback("::1")
    assert is_loopback("[::1]")
    assert is_loopback("localhost")
    assert not is_loopback("0.0.0.0")
    assert not is_loopback("10.1.2.3")
    assert not is_loopback("example.org")


def test_settings_are_checked():
    with pytest.raises(InvalidInputError, match="share the key"):
        create_app([custom("a", "length_score"), custom("a", "label_match")])
    with pytest.raises(InvalidInputError, match="max_batch"):
        create_app(graders(), max_batch=0)
    with pytest.raises(InvalidInputError, match="failure_value"):
        create_app(graders(), failure_value=math.nan)
    with pytest.raises(InvalidInputError, match="at least one grader"):
        create_app([])


def test_missing_aiohttp_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "aiohttp", None)
    monkeypatch.setitem(sys.modules, "aiohttp.web", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'gradewire\[serve\]'"):
        create_app(graders())


def test_importing_the_server_and_factory_pulls_no_aiohttp():
    import subprocess

    code = (
        "import sys, gradewire.server._server, gradewire.specs._factory\n"
        "import gradewire.tools._endpoint_grader\n"
        "print(sorted({'aiohttp', 'gradewire.specs._grader_specs'} & set(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
