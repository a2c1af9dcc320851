"""EndpointGrader over real HTTP: the scripted loopback server for shapes and faults."""

from __future__ import annotations

import math
import pickle

import pytest

from gradewire import (
    GradingError,
    IgnoreGradeException,
    InvalidInputError,
    InvalidTypeError,
    ModelCallError,
    StringThread,
)
from gradewire.http import RetryPolicy
from gradewire.http._retry import ModelHTTPError
from gradewire.tools._endpoint_grader import EndpointGrader
from support.judge_server import DROP, Reply, error, malformed

SAMPLE = StringThread(
    [("system", "be brief"), ("user", "What is 2+2?"), ("assistant", "4")],
    metadata={"label": "4", "id": 7},
)


@pytest.fixture
def make_endpoint(judge_server, sleeps):
    def make(path: str = "/reward", **options) -> EndpointGrader:
        options.setdefault("retry", RetryPolicy(sleep=sleeps, random=lambda: 0.0))
        return EndpointGrader("rm", f"http://127.0.0.1:{judge_server.port}{path}", **options)

    return make


async def test_posts_the_thread_and_reads_the_reward(judge_server, make_endpoint):
    judge_server.script({"reward": 0.75, "reasoning": "close enough"})
    grade = await make_endpoint(token="s3cret").grade(SAMPLE)
    assert (grade.value, grade.grader_key, grade.reasoning) == (0.75, "rm", "close enough")
    assert grade.info["attempts"] == 1
    [request] = judge_server.requests
    assert (request.method, request.path) == ("POST", "/reward")
    assert request.json == {"thread": SAMPLE.to_dict()}
    assert request.headers["authorization"] == "Bearer s3cret"
    assert request.headers["content-type"] == "application/json"


@pytest.mark.parametrize("field", ["reward", "score", "value"])
async def test_reads_any_of_the_reward_fields(judge_server, make_endpoint, field):
    judge_server.script({field: 3})
    assert (await make_endpoint().grade(SAMPLE)).value == 3.0


async def test_no_token_no_authorization_header(judge_server, make_endpoint):
    judge_server.script({"reward": 1.0})
    await make_endpoint(headers={"X-Team": "rl"}).grade(SAMPLE)
    [request] = judge_server.requests
    assert "authorization" not in request.headers
    assert request.headers["x-team"] == "rl"


async def test_a_remote_grade_keeps_its_children(judge_server, make_endpoint):
    remote = {
        "value": 0.5,
        "grader_key": "remote-key",
        "reasoning": "half",
        "weight": 1.0,
        "children": [{"value": 1.0, "grader_key": "a"}, {"value": 0.0, "grader_key": "b"}],
        "info": {"note": "x"},
    }
    judge_server.script({"grade": remote, "error": None, "abstained": False})
    grade = await make_endpoint(remote_grader="remote-key").grade(SAMPLE)
    assert grade.grader_key == "rm"
    assert [c.grader_key for c in grade.children] == ["a", "b"]
    assert grade.info["note"] == "x"
    assert judge_server.requests[0].json["grader"] == "remote-key"


async def test_openrlhf_shape(judge_server, make_endpoint):
    judge_server.script({"rewards": [0.25], "scores": [0.25], "extra_logs": {}})
    grade = await make_endpoint(payload="openrlhf").grade(SAMPLE)
    assert grade.value == 0.25
    assert judge_server.requests[0].json == {
        "query": ["What is 2+2?4"],
        "prompts": ["What is 2+2?"],
        "labels": ["4"],
    }


async def test_openrlhf_prompt_comes_from_metadata_when_given(judge_server, make_endpoint):
    judge_server.script({"rewards": [1]})
    templated = "<|user|>What is 2+2?<|assistant|>"
    await make_endpoint(payload="openrlhf").grade(SAMPLE.with_metadata(prompt=templated))
    body = judge_server.requests[0].json
    assert body["prompts"] == [templated]
    assert body["query"] == [templated + "4"]


async def test_429_waits_as_retry_after_says(judge_server, make_endpoint, sleeps):
    judge_server.script(error(429, retry_after=2), {"reward": 1.0})
    grade = await make_endpoint().grade(SAMPLE)
    assert grade.value == 1.0
    assert len(judge_server.requests) == 2
    assert sleeps.delays == [2.0]  # jitter source returns 0
    assert grade.info["attempts"] == 2


async def test_500_then_success(judge_server, make_endpoint, sleeps):
    judge_server.script(error(500), error(503), {"reward": 0.5})
    assert (await make_endpoint().grade(SAMPLE)).value == 0.5
    assert len(judge_server.requests) == 3
    assert len(sleeps.delays) == 2


async def test_timeout_then_success(judge_server, make_endpoint):
    judge_server.script(Reply(json={"reward": 0.0}, delay=2.0), {"reward": 0.9})
    grade = await make_endpoint(attempt_timeout=0.2).grade(SAMPLE)
    assert grade.value == 0.9
    assert len(judge_server.requests) == 2


async def test_timeout_bounds_the_whole_grade_and_attempt_timeout_each_attempt(
    judge_server, make_endpoint
):
    # Each attempt may take 10 s, the whole grade 0.3 s: a slow endpoint is a timeout
    # outcome of the grade, counted as one, whatever the attempts could still do.
    judge_server.script(Reply(json={"reward": 0.0}, delay=5.0))
    grader = make_endpoint(timeout=0.3, attempt_timeout=10)
    assert (grader.timeout, grader.attempt_timeout) == (0.3, 10.0)
    assert await grader.grade_many([SAMPLE]) == [None]
    logs = grader.get_logs()
    assert logs["score/timeout_count"] == 1
    assert logs["score/error_count"] == 1


def test_timeout_alone_warns_that_it_now_bounds_the_whole_grade():
    with pytest.warns(DeprecationWarning, match="attempt_timeout"):
        grader = EndpointGrader("rm", "http://h/x", timeout=5)
    assert (grader.timeout, grader.attempt_timeout) == (5.0, 30.0)
    default = EndpointGrader("rm", "http://h/x")
    assert (default.timeout, default.attempt_timeout) == (None, 30.0)


@pytest.mark.parametrize("bad", [0, -1, math.inf, math.nan, pytest.param(10**400, id="huge")])
def test_both_bounds_refuse_what_bounds_nothing(bad):
    for name in ("timeout", "attempt_timeout"):
        options = {"attempt_timeout": 1, name: bad}
        with pytest.raises(InvalidInputError, match=f"{name} must be a positive, finite"):
            EndpointGrader("rm", "http://h/x", **options)
    with pytest.raises(InvalidTypeError, match="attempt_timeout must be a number of seconds"):
        EndpointGrader("rm", "http://h/x", attempt_timeout=True)


async def test_garbage_body_then_success(judge_server, make_endpoint):
    judge_server.script(malformed(), DROP, {"reward": 0.1})
    assert (await make_endpoint().grade(SAMPLE)).value == 0.1
    assert len(judge_server.requests) == 3


async def test_exhausted_retries_are_an_error_never_a_zero(judge_server, make_endpoint):
    judge_server.handler = lambda request: error(503, "overloaded")
    grader = make_endpoint(retry=RetryPolicy(max_attempts=3, sleep=_no_wait))
    with pytest.raises(ModelCallError, match=r"after 3 attempts.*HTTP 503: overloaded"):
        await grader.grade(SAMPLE)
    assert len(judge_server.requests) == 3
    judge_server.reset()
    assert await grader.grade_many([SAMPLE]) == [None]
    logs = grader.get_logs()
    assert logs["score/error_count"] == 1
    assert "score/mean" not in logs


async def test_a_refusal_is_not_retried(judge_server, make_endpoint):
    judge_server.script(Reply(status=401, json={"error": "missing or wrong bearer token"}))
    with pytest.raises(ModelHTTPError, match="HTTP 401: missing or wrong bearer token") as info:
        await make_endpoint().grade(SAMPLE)
    assert info.value.status == 401
    assert "token" in str(info.value)
    assert len(judge_server.requests) == 1


@pytest.mark.parametrize(
    "body",
    [
        b'{"reward": null}',
        b'{"reward": "0.5"}',
        b'{"reward": NaN}',
        b'{"score": Infinity}',
        b'{"reward": true}',
        b'{"other": 1}',
        b"[1, 2]",
        b'{"rewards": [1]}',
    ],
)
async def test_an_answer_without_a_finite_number_is_a_clear_error(
    judge_server, make_endpoint, body
):
    judge_server.script(Reply(body=body))
    with pytest.raises(ModelCallError, match=r"reward endpoint at http://127\.0\.0\.1") as info:
        await make_endpoint().grade(SAMPLE)
    assert "finite number" in str(info.value)
    assert len(judge_server.requests) == 1  # a wrong answer is not worth a retry


@pytest.mark.parametrize(
    ("answer", "raised", "message"),
    [
        (
            {
                "rewards": [0.0],
                "extra_logs": {"reward_abstained": [1.0], "reward_failed": [0.0]},
                "errors": ["no label to compare with"],
            },
            IgnoreGradeException,
            "abstained: no label to compare with",
        ),
        (
            {
                "rewards": [-1.0],
                "extra_logs": {"reward_abstained": [0.0], "reward_failed": [1.0]},
                "errors": ["ValueError: boom"],
            },
            GradingError,
            r"at http://127\.0\.0\.1:\d+/reward could not grade the sample: ValueError: boom",
        ),
        (
            {"rewards": [0.0], "extra_logs": {"reward_failed": [True]}},
            GradingError,
            "flagged in extra_logs.reward_failed",
        ),
        ({"rewards": [0.0], "errors": ["judge unreachable"]}, GradingError, "judge unreachable"),
        ({"extra_logs": {"reward_abstained": [1]}}, IgnoreGradeException, "reward_abstained"),
    ],
)
async def test_openrlhf_answer_flagged_as_failed_or_abstained_is_no_grade(
    judge_server, make_endpoint, answer, raised, message
):
    judge_server.script(answer, answer)
    grader = make_endpoint(payload="openrlhf")
    with pytest.raises(raised, match=message):
        await grader.grade(SAMPLE)
    assert await grader.grade_many([SAMPLE]) == [None]
    counted = "score/abstained_count" if raised is IgnoreGradeException else "score/error_count"
    assert grader.get_logs()[counted] == 1
    assert len(judge_server.requests) == 2  # a flagged sample is not retried


@pytest.mark.parametrize(
    "extra",
    [
        {"extra_logs": {"reward_abstained": [0.0], "reward_failed": [0.0]}, "errors": [None]},
        {"extra_logs": {"reward_failed": [False], "prompt_not_in_query": [1.0]}, "errors": [""]},
        {"extra_logs": {"reward_failed": "yes"}, "errors": "x"},  # not lists: no flags
        {"extra_logs": None, "errors": [3]},
    ],
)
async def test_openrlhf_answer_without_flags_is_a_grade(judge_server, make_endpoint, extra):
    judge_server.script({"rewards": [0.0], **extra})
    assert (await make_endpoint(payload="openrlhf").grade(SAMPLE)).value == 0.0


@pytest.mark.parametrize("body", [b'{"rewards": []}', b'{"rewards": [null]}', b'{"reward": 1}'])
async def test_openrlhf_answer_without_a_reward_is_an_error(judge_server, make_endpoint, body):
    judge_server.script(Reply(body=body))
    with pytest.raises(ModelCallError, match="rewards"):
        await make_endpoint(payload="openrlhf").grade(SAMPLE)


async def test_max_attempts_bounds_the_attempts(judge_server, make_endpoint, sleeps):
    judge_server.handler = lambda request: error(503, "overloaded")
    grader = make_endpoint(max_attempts=2)
    with pytest.raises(ModelCallError, match="after 2 attempts"):
        await grader.grade(SAMPLE)
    assert len(judge_server.requests) == 2
    assert len(sleeps.delays) == 1  # the custom policy's sleep is kept
    assert grader.retry.max_attempts == 2
    judge_server.reset()
    once = make_endpoint(max_attempts=1, retry=None)
    with pytest.raises(ModelCallError):
        await once.grade(SAMPLE)
    assert len(judge_server.requests) == 1
    assert (once.retry.initial_delay, once.retry.max_delay) == (0.5, 20.0)  # the defaults


@pytest.mark.parametrize("value", [0, -1, True, 2.0, "3"])
def test_max_attempts_is_checked(value):
    with pytest.raises(InvalidInputError, match=r"max_attempts must be an int >= 1"):
        EndpointGrader("rm", "http://h/x", max_attempts=value)


async def test_the_spec_max_attempts_reaches_the_grader(judge_server, monkeypatch):
    from gradewire.specs._factory import build_grader

    judge_server.handler = lambda request: error(500, "down")
    spec = {
        "type": "external_endpoint",
        "key": "rm",
        "url": f"http://127.0.0.1:{judge_server.port}/reward",
        "max_attempts": 3,
    }
    grader = build_grader(spec)
    assert grader.retry.max_attempts == 3
    assert grader.spec["max_attempts"] == 3
    grader.retry = RetryPolicy(max_attempts=grader.retry.max_attempts, sleep=_no_wait)
    assert await grader.grade_many([SAMPLE]) == [None]
    assert len(judge_server.requests) == 3
    default = build_grader({**spec, "max_attempts": None})
    assert default.retry == RetryPolicy()
    await grader.aclose()


async def test_the_endpoint_abstaining_or_failing_is_kept_apart(judge_server, make_endpoint):
    judge_server.script(
        {"grade": None, "error": "no label", "abstained": True},
        {"grade": None, "error": "ValueError: boom", "abstained": False},
    )
    grader = make_endpoint()
    with pytest.raises(IgnoreGradeException, match="no label"):
        await grader.grade(SAMPLE)
    with pytest.raises(GradingError, match="ValueError: boom"):
        await grader.grade(SAMPLE)


async def test_logs_score_and_attempts_and_tables(judge_server, make_endpoint):
    judge_server.script({"reward": 1.0, "reasoning": "<b>ok</b>"}, error(500), {"reward": 0.0})
    grader = make_endpoint(sample_tables=True)
    await grader.grade_many([SAMPLE], max_concurrency=1)
    await grader.grade_many([SAMPLE], max_concurrency=1)
    logs = grader.get_logs()
    assert logs["score/mean"] == 0.5
    assert logs["attempts/max"] == 2
    table = logs["score/scored_samples"]
    assert table.column("Prompt") == ["What is 2+2?", "What is 2+2?"]
    assert table.column("Reasoning") == ["<b>ok</b>", ""]


async def test_metadata_that_is_not_json_is_refused_before_sending(judge_server, make_endpoint):
    with pytest.raises(InvalidInputError, match="metadata"):
        await make_endpoint().grade(SAMPLE.with_metadata(when=object()))
    assert judge_server.requests == []


def test_configuration_is_checked():
    with pytest.raises(InvalidInputError, match="http:// or https://"):
        EndpointGrader("rm", "127.0.0.1:8000/v1/grade")
    with pytest.raises(InvalidInputError, match="payload"):
        EndpointGrader("rm", "http://h/x", payload="trl")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match=r"\?grader="):
        EndpointGrader("rm", "http://h/x", payload="openrlhf", remote_grader="a")
    with pytest.raises(InvalidInputError, match="line breaks"):
        EndpointGrader("rm", "http://h/x", headers={"X": "a\nb"})
    with pytest.raises(InvalidTypeError):
        EndpointGrader("rm", "http://h/x", retry=3)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="timeout"):
        EndpointGrader("rm", "http://h/x", timeout=0)
    assert "s3cret" not in repr(EndpointGrader("rm", "http://h/x", token="s3cret"))


async def test_survives_pickling_after_use(judge_server, make_endpoint):
    judge_server.script({"reward": 1.0}, {"reward": 0.5})
    grader = make_endpoint(token="t", retry=RetryPolicy(max_attempts=2))
    await grader.grade(SAMPLE)
    copy = pickle.loads(pickle.dumps(grader))
    assert (await copy.grade(SAMPLE)).value == 0.5
    assert judge_server.requests[1].headers["authorization"] == "Bearer t"
    await copy.aclose()
    await grader.aclose()


async def test_aclose_closes_connections(judge_server, make_endpoint):
    judge_server.script({"reward": 1.0}, {"reward": 1.0})
    async with make_endpoint() as grader:
        await grader.grade(SAMPLE)
        assert judge_server.open_connections == 1
    await _until(lambda: judge_server.open_connections == 0)
    await grader.grade(SAMPLE)  # reopens on demand
    await grader.aclose()


async def _no_wait(delay: float) -> None:
    return None


async def _until(condition, attempts: int = 200) -> None:
    import asyncio

    for _ in range(attempts):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition never held")


async def test_an_answer_past_max_response_bytes_is_an_error_not_retried(
    judge_server, make_endpoint
):
    judge_server.script({"reward": 1.0, "reasoning": "x" * 5_000}, {"reward": 1.0})
    grader = make_endpoint(max_response_bytes=1_000)
    with pytest.raises(ModelHTTPError, match="max_response_bytes"):
        await grader.grade(SAMPLE)
    assert len(judge_server.requests) == 1  # refused for good: no second attempt
    with pytest.raises(InvalidInputError, match="max_response_bytes"):
        make_endpoint(max_response_bytes=0)
