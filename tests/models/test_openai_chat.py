"""OpenAIChatModel over real HTTP to the loopback judge server."""

from __future__ import annotations

import asyncio
import pickle
import threading
import time
from collections.abc import Callable

import httpx
import pytest

from gradewire import InvalidInputError, InvalidTypeError, ModelCallError
from gradewire.core import attach_log_fields
from gradewire.http._retry import ModelHTTPError, RetryPolicy
from gradewire.models import ChatCompletion, ChatModel, TokenLogprob, Usage
from gradewire.models._openai_chat import OpenAIChatModel
from gradewire.models._openai_config import DEFAULT_BASE_URL
from support.judge_server import JudgeServer, Request, chat, error

USER = [{"role": "user", "content": "Is the sky blue? Answer PASS or FAIL."}]


def ask(i: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"question {i}"}]


async def test_parses_text_usage_and_model(judge_server, make_judge):
    judge_server.script(chat("PASS", prompt_tokens=123, completion_tokens=7, model="served-name"))
    answer = await make_judge().complete(USER)
    assert answer == ChatCompletion(
        text="PASS",
        usage=Usage(123, 7),
        logprobs=None,
        model="served-name",
        cached=False,
        finish_reason="stop",
    )
    [request] = judge_server.chat_requests
    assert request.method == "POST"
    assert request.path == "/v1/chat/completions"
    assert request.json["model"] == "judge"
    assert request.json["messages"] == USER
    assert "logprobs" not in request.json


async def test_lone_surrogates_in_messages_are_sent_as_json_escapes(judge_server, make_judge):
    # A completion cut in the middle of an emoji holds half a surrogate pair: not encodable
    # as UTF-8, yet valid JSON text as a \\u escape.
    cut = "smile \ud83d"
    answer = await make_judge().complete([{"role": "user", "content": cut}])
    assert answer.text == "PASS"
    [request] = judge_server.chat_requests
    assert b"\\ud83d" in request.body
    assert request.json["messages"] == [{"role": "user", "content": cut}]


async def test_is_a_chat_model(make_judge):
    assert isinstance(make_judge(), ChatModel)


async def test_logprobs_are_asked_for_and_parsed(judge_server, make_judge):
    judge_server.script(
        chat(
            "PASS",
            logprobs=[("PA", -0.01, [("PA", -0.01), ("FA", -4.6)]), ("SS", -0.002, [])],
        )
    )
    answer = await make_judge().complete(USER, logprobs=2)
    assert answer.logprobs == (
        TokenLogprob("PA", -0.01, (("PA", -0.01), ("FA", -4.6))),
        TokenLogprob("SS", -0.002, ()),
    )
    body = judge_server.chat_requests[0].json
    assert body["logprobs"] is True
    assert body["top_logprobs"] == 2


async def test_missing_usage_counts_zero_tokens(judge_server, make_judge):
    judge_server.script({"choices": [{"message": {"role": "assistant", "content": "ok"}}]})
    answer = await make_judge("m").complete(USER)
    assert answer.usage == Usage(0, 0)
    assert answer.model == "m"  # the requested name when the server reports none


async def test_sampling_parameters_and_extra_body(judge_server, make_judge):
    model = make_judge(temperature=0.0, max_tokens=16, extra_body={"seed": 7, "top_k": 1})
    await model.complete(USER)
    await model.complete(USER, temperature=0.7, max_tokens=3, response_format={"type": "text"})
    first, second = (r.json for r in judge_server.chat_requests)
    assert (first["temperature"], first["max_tokens"], first["seed"]) == (0.0, 16, 7)
    assert "response_format" not in first
    assert (second["temperature"], second["max_tokens"], second["top_k"]) == (0.7, 3, 1)
    assert second["response_format"] == {"type": "text"}


async def test_api_key_is_sent_as_bearer(judge_server, make_judge):
    await make_judge(api_key="sk-secret\n", headers={"X-Team": "evals"}).complete(USER)
    headers = judge_server.chat_requests[0].headers
    assert headers["authorization"] == "Bearer sk-secret"  # the pasted newline is dropped
    assert headers["x-team"] == "evals"
    assert headers["content-type"] == "application/json"
    assert "sk-secret" not in repr(make_judge(api_key="sk-secret"))


def test_no_key_for_the_public_openai_endpoint_fails_at_construction(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(InvalidInputError, match="OPENAI_API_KEY") as caught:
        OpenAIChatModel("gpt-4o-mini")
    assert "OPENAI_BASE_URL" in str(caught.value)
    with pytest.raises(InvalidInputError, match="OPENAI_API_KEY"):
        OpenAIChatModel("gpt-4o-mini", base_url="https://api.openai.com/v1/", api_key=" ")
    assert OpenAIChatModel("gpt-4o-mini", api_key="sk-test").base_url == DEFAULT_BASE_URL
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    assert OpenAIChatModel("gpt-4o-mini").base_url == DEFAULT_BASE_URL


async def test_environment_defaults(judge_server, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", judge_server.base_url + "/")
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    model = OpenAIChatModel("judge")
    assert model.base_url == judge_server.base_url
    await model.complete(USER)
    assert judge_server.chat_requests[0].headers["authorization"] == "Bearer env-key"

    monkeypatch.delenv("OPENAI_BASE_URL")
    assert OpenAIChatModel("judge").base_url == DEFAULT_BASE_URL == "https://api.openai.com/v1"
    monkeypatch.delenv("OPENAI_API_KEY")
    local = OpenAIChatModel("judge", base_url=judge_server.base_url)
    await local.complete(USER)
    assert "authorization" not in judge_server.chat_requests[1].headers  # local servers need none


def test_invalid_configuration_says_what_to_pass():
    with pytest.raises(InvalidInputError, match="http://"):
        OpenAIChatModel("m", base_url="localhost:8000/v1")
    with pytest.raises(InvalidInputError, match="extra_body cannot set"):
        OpenAIChatModel("m", base_url="http://x/v1", extra_body={"model": "other"})
    with pytest.raises(InvalidInputError, match="line breaks"):
        OpenAIChatModel("m", base_url="http://x/v1", headers={"X-A": "a\r\nInjected: 1"})
    with pytest.raises(InvalidInputError, match="max_concurrency"):
        OpenAIChatModel("m", base_url="http://x/v1", max_concurrency=0)
    with pytest.raises(InvalidInputError, match="attempt_timeout"):
        OpenAIChatModel("m", base_url="http://x/v1", attempt_timeout=0)
    with pytest.raises(InvalidInputError, match="positive, finite"):
        OpenAIChatModel("m", base_url="http://x/v1", attempt_timeout=float("inf"))
    with pytest.raises(InvalidInputError, match="model"):
        OpenAIChatModel(" ", base_url="http://x/v1")
    with pytest.raises(InvalidTypeError, match=r"httpx\.AsyncClient"):
        OpenAIChatModel("m", base_url="http://x/v1", http_client=object())  # type: ignore[arg-type]


async def test_messages_as_a_string_are_refused_with_the_fix(make_judge):
    with pytest.raises(InvalidTypeError, match="'role': 'user'"):
        await make_judge().complete("just a prompt")  # type: ignore[arg-type]


async def test_concurrency_never_exceeds_the_limit(judge_server, make_judge):
    judge_server.handler = lambda request: chat("PASS", delay=0.05)
    model = make_judge(max_concurrency=5)
    answers = await asyncio.gather(*(model.complete(ask(i)) for i in range(40)))
    assert [a.text for a in answers] == ["PASS"] * 40
    assert len(judge_server.chat_requests) == 40
    assert judge_server.max_in_flight == 5


async def test_models_of_one_endpoint_share_one_limit(judge_server, make_judge):
    judge_server.handler = lambda request: chat("PASS", delay=0.05)
    loose, strict = make_judge(max_concurrency=8), make_judge(max_concurrency=3)
    await asyncio.gather(
        *(loose.complete(ask(i)) for i in range(12)),
        *(strict.complete(ask(100 + i)) for i in range(12)),
    )
    assert judge_server.max_in_flight == 3  # the strictest limit holds for both


async def test_other_models_on_the_server_have_their_own_limit(judge_server, make_judge):
    judge_server.handler = lambda request: chat("PASS", delay=0.05)
    first, second = make_judge("a", max_concurrency=2), make_judge("b", max_concurrency=2)
    await asyncio.gather(
        *(first.complete(ask(i)) for i in range(6)), *(second.complete(ask(i)) for i in range(6))
    )
    assert judge_server.max_in_flight == 4


def test_one_model_works_on_many_event_loops(judge_server, make_judge):
    model = make_judge(max_concurrency=2)
    judge_server.handler = lambda request: chat("PASS", delay=0.02)
    results: list[list[str]] = []

    async def batch() -> list[str]:
        return [a.text for a in await asyncio.gather(*(model.complete(ask(i)) for i in range(4)))]

    threads = [threading.Thread(target=lambda: results.append(asyncio.run(batch()))) for _ in "ab"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    results.append(asyncio.run(batch()))
    assert results == [["PASS"] * 4] * 3
    # Each loop has its own limit of 2 (asyncio primitives cannot be shared across loops).
    assert judge_server.max_in_flight <= 4


def wait_for(condition: Callable[[], bool], seconds: float = 5.0) -> bool:
    """Poll until ``condition()`` (the server sees closes from its own thread)."""
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()


def test_connections_close_when_the_loop_shuts_down(judge_server, make_judge):
    model = make_judge()

    async def use() -> None:
        await asyncio.gather(*(model.complete(ask(i)) for i in range(3)))
        assert judge_server.open_connections >= 1

    asyncio.run(use())  # no aclose(): the loop's shutdown closes the model's connections
    assert wait_for(lambda: judge_server.open_connections == 0)


async def test_aclose_closes_connections_and_the_model_reopens(judge_server, make_judge):
    async with make_judge() as model:
        await model.complete(USER)
    assert wait_for(lambda: judge_server.open_connections == 0)
    assert (await model.complete(ask(2))).text == "PASS"


async def test_identical_concurrent_calls_share_one_request(judge_server, make_judge):
    judge_server.handler = lambda request: chat("PASS", prompt_tokens=50, delay=0.05)
    model = make_judge()
    answers = await asyncio.gather(*(model.complete(USER) for _ in range(10)))
    assert len(judge_server.chat_requests) == 1
    assert sorted(a.cached for a in answers) == [False] + [True] * 9
    assert {a.usage for a in answers} == {Usage(50, 5)}  # the usage of the one real call


async def test_identical_calls_made_one_after_the_other_each_reach_the_server(
    judge_server, make_judge
):
    model = make_judge()
    await model.complete(USER)
    await model.complete(USER)
    assert len(judge_server.chat_requests) == 2  # de-duplication is for calls in flight


async def test_calls_that_differ_in_a_parameter_are_not_shared(judge_server, make_judge):
    judge_server.handler = lambda request: chat("PASS", delay=0.05)
    model = make_judge()
    await asyncio.gather(model.complete(USER), model.complete(USER, temperature=0.5))
    assert len(judge_server.chat_requests) == 2


async def test_a_shared_failure_reaches_every_caller(judge_server, make_judge):
    judge_server.handler = lambda request: error(400, "bad request", delay=0.05)
    model = make_judge()
    outcomes = await asyncio.gather(
        *(model.complete(USER) for _ in range(3)), return_exceptions=True
    )
    assert all(isinstance(o, ModelCallError) for o in outcomes)
    assert len(judge_server.chat_requests) == 1


async def test_callers_sharing_a_failed_call_each_get_their_own_exception(judge_server, make_judge):
    # Graders attach per-sample fields to the exception they catch: a shared object would
    # carry one sample's fields into another's error record.
    judge_server.handler = lambda request: error(400, "bad request", delay=0.05)
    model = make_judge()
    outcomes = await asyncio.gather(
        *(model.complete(USER) for _ in range(3)), return_exceptions=True
    )
    assert len(judge_server.chat_requests) == 1
    assert all(isinstance(o, ModelHTTPError) for o in outcomes)
    assert len({id(o) for o in outcomes}) == 3
    first, *others = outcomes
    for other in others:
        assert type(other) is type(first)
        assert str(other) == str(first)
        assert (other.endpoint, other.status, other.attempts, other.server_message) == (
            first.endpoint,
            first.status,
            first.attempts,
            first.server_message,
        )
        assert other.__cause__ is first  # the copy points at the failure it stands for
    attach_log_fields(first, {"sample": 0})
    attach_log_fields(others[0], {"sample": 1})
    assert [getattr(o, "log_fields", None) for o in outcomes] == [
        {"sample": 0},
        {"sample": 1},
        None,
    ]


async def test_a_shared_failure_copied_after_the_first_caller_tagged_it_is_clean(
    judge_server, make_judge
):
    # The caller that made the request tags its exception before the others wake up.
    judge_server.handler = lambda request: error(400, "bad request", delay=0.05)
    model = make_judge()

    async def tagged() -> None:
        try:
            await model.complete(USER)
        except ModelHTTPError as exc:
            attach_log_fields(exc, {"owner": "first"})
            raise

    first = asyncio.ensure_future(tagged())
    while not judge_server.chat_requests:
        await asyncio.sleep(0.01)
    follower = await asyncio.gather(model.complete(USER), return_exceptions=True)
    with pytest.raises(ModelHTTPError) as caught:
        await first
    assert caught.value.log_fields == {"owner": "first"}
    assert isinstance(follower[0], ModelHTTPError)
    assert not hasattr(follower[0], "log_fields")


async def test_a_cancelled_caller_does_not_fail_those_sharing_its_call(judge_server, make_judge):
    judge_server.handler = lambda request: chat("PASS", delay=0.2)
    model = make_judge()
    first = asyncio.ensure_future(model.complete(USER))
    while not judge_server.chat_requests:
        await asyncio.sleep(0.01)
    second = asyncio.ensure_future(model.complete(USER))
    await asyncio.sleep(0.01)  # the second caller joins the first one's call
    first.cancel()
    answer = await second
    assert answer.text == "PASS"
    assert first.cancelled()
    assert len(judge_server.chat_requests) == 2  # the second caller asked again for itself


async def test_your_own_httpx_client_is_used_and_left_open(judge_server, make_judge):
    seen: list[httpx.Request] = []

    async def hook(request: httpx.Request) -> None:
        seen.append(request)

    async with httpx.AsyncClient(event_hooks={"request": [hook]}) as client:
        model = make_judge(http_client=client)
        answer = await model.complete(USER)
        await model.aclose()
        assert not client.is_closed
        assert answer.text == "PASS"
        assert len(seen) == 1
        assert seen[0].headers["authorization"] == "Bearer test-key"


async def test_a_refusal_is_a_model_call_error(judge_server, make_judge):
    judge_server.script(
        {"choices": [{"message": {"role": "assistant", "content": None, "refusal": "No."}}]}
    )
    with pytest.raises(ModelCallError, match="refused to answer: No"):
        await make_judge().complete(USER)


async def test_content_parts_are_joined(judge_server, make_judge):
    parts = [{"type": "text", "text": "PA"}, {"type": "text", "text": "SS"}]
    judge_server.script({"choices": [{"message": {"role": "assistant", "content": parts}}]})
    assert (await make_judge().complete(USER)).text == "PASS"


def test_model_http_error_survives_pickling():
    error = ModelHTTPError("failed", endpoint="http://x/v1", status=503, attempts=4)
    again = pickle.loads(pickle.dumps(error))
    assert (str(again), again.endpoint, again.status, again.attempts) == (
        "failed",
        "http://x/v1",
        503,
        4,
    )
    assert isinstance(again, ModelCallError)


async def test_handler_sees_the_request(judge_server, make_judge):
    def handler(request: Request) -> str:
        return "FAIL" if "blue" in request.json["messages"][0]["content"] else "PASS"

    judge_server.handler = handler
    model = make_judge()
    assert (await model.complete(USER)).text == "FAIL"
    assert (await model.complete(ask(1))).text == "PASS"


def test_judge_server_stops_cleanly():
    server = JudgeServer().start()
    server.stop()
    server.stop()  # idempotent
    assert not any(t.name == "judge-server" and t.is_alive() for t in threading.enumerate())


async def test_a_pickled_model_works_in_another_process_shape(judge_server, make_judge, tmp_path):
    model = make_judge(
        retry=RetryPolicy(max_attempts=2),  # the fixture's lambdas would not pickle
        max_concurrency=3,
        temperature=0.0,
        extra_body={"seed": 1},
        headers={"X-Team": "evals"},
        cache=tmp_path / "c.sqlite",
        json_schema=False,
    )
    await model.complete(USER)
    copy = pickle.loads(pickle.dumps(model))
    assert (copy.model, copy.base_url, copy.max_concurrency) == ("judge", model.base_url, 3)
    assert (copy.retry.max_attempts, copy.json_schema) == (model.retry.max_attempts, False)
    assert copy.cache is not model.cache
    assert (await copy.complete(USER)).cached  # same file, its own handle
    await copy.complete(ask(1))
    last = judge_server.chat_requests[-1]
    assert last.headers["authorization"] == "Bearer test-key"
    assert last.headers["x-team"] == "evals"
    assert (last.json["temperature"], last.json["seed"]) == (0.0, 1)
    await copy.aclose()
    await model.aclose()


async def test_a_model_with_your_own_client_says_why_it_cannot_be_pickled(make_judge):
    async with httpx.AsyncClient() as client:
        with pytest.raises(InvalidTypeError, match="make the model in the worker"):
            pickle.dumps(make_judge(http_client=client))
