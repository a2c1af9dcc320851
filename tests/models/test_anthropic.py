"""AnthropicModel on a loopback Messages API; the anthropic package checks what goes each way."""

from __future__ import annotations

import json
import pickle
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from gradewire import InvalidInputError, ModelCallError
from gradewire.core import StringThread, Turn
from gradewire.http import RetryPolicy
from gradewire.judges import BinaryJudgeGrader, RangeJudgeGrader
from gradewire.models import (
    AnthropicModel,
    ServedModel,
    TruncatedOutputError,
    Usage,
    complete_structured,
    get_model,
)
from support.messages_api import MessagesAPI, api_error, message

USER = [
    {"role": "system", "content": "You are a careful judge."},
    {"role": "user", "content": "Does the answer cite its source?"},
]
KEY = "sk-ant-test"


class Verdict(BaseModel):
    reasoning: str
    verdict: Literal["PASS", "FAIL"]


GOOD = {"reasoning": "cites [1]", "verdict": "PASS"}


@pytest.fixture
def api(judge_server) -> MessagesAPI:
    api = MessagesAPI()
    judge_server.handler = api
    return api


@pytest.fixture
def make_claude(judge_server, sleeps):
    def make(name: str = "claude-judge", **options: Any) -> AnthropicModel:
        options.setdefault("base_url", f"http://127.0.0.1:{judge_server.port}")
        options.setdefault("api_key", KEY)
        options.setdefault("retry", RetryPolicy(sleep=sleeps, random=lambda: 0.0))
        model = get_model(f"anthropic/{name}", **options)
        assert isinstance(model, AnthropicModel)
        return model

    return make


async def test_a_call_is_a_valid_messages_request_and_its_answer_is_read(api, make_claude):
    api.script(message("It cites [1].", input_tokens=30, cache_read_input_tokens=5))
    answer = await make_claude().complete(USER)
    assert answer.text == "It cites [1]."
    assert answer.usage == Usage(35, 7)  # cached input tokens are input tokens too
    assert (answer.model, answer.finish_reason, answer.fingerprint) == (
        "claude-judge-20260101",
        "stop",
        None,
    )
    [body] = api.bodies  # checked against MessageCreateParamsNonStreaming by the server
    assert body["system"] == "You are a careful judge."
    assert body["messages"] == [USER[1]]
    assert body["max_tokens"] == 4096  # the API requires one
    assert "temperature" not in body


async def test_a_base_url_given_with_v1_reaches_the_same_place(api, judge_server, make_claude):
    model = make_claude(base_url=judge_server.base_url)  # http://127.0.0.1:PORT/v1
    assert model.url == f"http://127.0.0.1:{judge_server.port}/v1/messages"
    assert (await model.complete(USER)).text == "PASS"


async def test_a_structured_call_forces_a_tool_whose_input_is_the_answer(api, make_claude):
    api.script(message(tool_input=GOOD, tool_name="Verdict"))
    verdict, answer = await complete_structured(make_claude(), USER, Verdict, max_tokens=300)
    assert verdict == Verdict(**GOOD)
    assert answer.finish_reason == "stop"
    [body] = api.bodies
    [tool] = body["tools"]
    assert tool["name"] == "Verdict"
    assert set(tool["input_schema"]["properties"]) == {"reasoning", "verdict"}
    assert body["tool_choice"] == {"type": "tool", "name": "Verdict"}
    assert body["max_tokens"] == 300
    assert "temperature" not in body  # a judge's default temperature is not sent
    assert body["messages"][-1]["content"] == USER[1]["content"]  # no example: a constraint


async def test_auto_moves_to_the_json_output_format_when_forced_tools_are_refused(api, make_claude):
    def answer(body: dict[str, Any]) -> Any:
        if "tool_choice" in body:
            return api_error(
                400,
                "invalid_request_error",
                "tool_choice: forced tool use is not supported when thinking is enabled",
            )
        return message(json.dumps(GOOD))

    api.answer = answer
    model = make_claude()
    verdict, _ = await complete_structured(model, USER, Verdict)
    assert verdict.verdict == "PASS"
    assert model.structured_output_dialect == "output_format"  # remembered
    forced, formatted = api.bodies
    assert "tools" in forced
    assert "tools" not in formatted
    schema = formatted["output_config"]["format"]["schema"]
    assert formatted["output_config"]["format"]["type"] == "json_schema"
    assert set(schema["properties"]) == {"reasoning", "verdict"}
    await complete_structured(model, USER, Verdict)
    assert "output_config" in api.bodies[-1]  # the next call goes there directly
    assert len(api.bodies) == 3


async def test_a_named_dialect_that_is_refused_says_what_to_set(api, make_claude):
    api.script(
        api_error(400, "invalid_request_error", "output_config.format: not supported by this model")
    )
    with pytest.raises(ModelCallError, match="structured_output='auto'"):
        await complete_structured(make_claude(structured_output="output_format"), USER, Verdict)


async def test_overloaded_529_is_retried_after_the_wait_asked_for(api, make_claude, sleeps):
    api.script(
        api_error(529, "overloaded_error", "Overloaded", retry_after=3),
        api_error(429, "rate_limit_error", "Number of requests has exceeded your rate limit"),
        message("PASS"),
    )
    assert (await make_claude().complete(USER)).text == "PASS"
    assert len(api.bodies) == 3
    assert sleeps.delays[0] == 3.0  # retry-after honoured (no jitter here)


async def test_overloaded_until_the_attempts_run_out_names_the_error(api, make_claude):
    api.answer = lambda body: api_error(529, "overloaded_error", "Overloaded")
    with pytest.raises(ModelCallError, match="overloaded_error") as caught:
        await make_claude(max_attempts=3).complete(USER)
    assert caught.value.status == 529  # type: ignore[attr-defined]
    assert caught.value.attempts == 3  # type: ignore[attr-defined]
    assert "allow more attempts" in str(caught.value)


async def test_an_unknown_key_fails_at_once_naming_the_fix(api, make_claude):
    with pytest.raises(ModelCallError, match="authentication_error") as caught:
        await make_claude(api_key="wrong").complete(USER)
    assert "ANTHROPIC_API_KEY" in str(caught.value)
    assert len(api.bodies) == 0  # refused before the body; not retried
    assert caught.value.attempts == 1  # type: ignore[attr-defined]


async def test_a_reply_cut_at_max_tokens_is_a_truncated_output(api, make_claude):
    api.script(message(tool_input={"reasoning": "cites"}, stop_reason="max_tokens"))
    with pytest.raises(TruncatedOutputError):
        await complete_structured(make_claude(), USER, Verdict, max_tokens=5)


async def test_a_refusal_is_a_model_call_error(api, make_claude):
    api.script(message("I can't help with that.", stop_reason="refusal"))
    with pytest.raises(ModelCallError, match="refused to answer"):
        await make_claude().complete(USER)


async def test_usage_records_who_answered(api, make_claude):
    model = make_claude()
    api.script(message("a"), message("b", model="claude-judge-20260301"))
    await model.complete(USER)
    await model.complete([{"role": "user", "content": "again"}])
    await model.complete(USER)  # the first answer is not cached: asked again
    usage = model.usage
    assert usage.calls == 3
    assert usage.served == {
        ServedModel("claude-judge-20260101"): 2,
        ServedModel("claude-judge-20260301"): 1,
    }


def test_the_profile_declares_no_logprobs_and_no_temperature(judge_server):
    model = get_model("anthropic/claude-judge", base_url="http://127.0.0.1:1", api_key=KEY)
    profile = model.profile
    assert (profile.provider, profile.logprobs) == ("anthropic", False)
    assert profile.dialects == ("tool_use", "output_format", "prompt")
    assert "temperature" not in profile.takes
    assert profile.defaults == {"max_tokens": 4096}
    with pytest.raises(InvalidInputError, match="does not take"):
        get_model("anthropic/claude-judge", base_url="http://127.0.0.1:1", temperature=0.3)


def test_anthropics_api_without_a_key_fails_at_construction(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    with pytest.raises(InvalidInputError, match="ANTHROPIC_API_KEY"):
        AnthropicModel("claude-haiku-4-5")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env")
    model = AnthropicModel("claude-haiku-4-5")
    assert model.url == "https://api.anthropic.com/v1/messages"


async def test_a_pickled_copy_calls_the_same_api(api, make_claude):
    model = make_claude(max_tokens=64, structured_output="tool_use", retry=RetryPolicy())
    copy = pickle.loads(pickle.dumps(model))
    assert isinstance(copy, AnthropicModel)
    assert (copy.url, copy.max_tokens, copy.structured_output) == (model.url, 64, "tool_use")
    assert (await copy.complete(USER)).text == "PASS"
    assert api.bodies[0]["max_tokens"] == 64


async def test_judges_grade_with_an_anthropic_model(api, make_claude):
    api.answer = lambda body: message(tool_input={"reasoning": "ok", "verdict": "PASS"})
    judge = BinaryJudgeGrader("cites", make_claude(), "The answer cites its source")
    sample = StringThread([Turn("user", "Q?"), Turn("assistant", "A [1].")])
    grade = await judge.grade(sample)
    assert grade.value == 1.0
    tool = api.bodies[0]["tools"][0]
    assert "verdict" in tool["input_schema"]["properties"]

    # A range judge asks for logprobs only where there are some: it uses the written score.
    api.answer = lambda body: message(tool_input={"reasoning": "fine", "score": 4})
    ranged = RangeJudgeGrader("clarity", make_claude(), "How clear?", low=1, high=5)
    grade = await ranged.grade(sample)
    assert grade.value == pytest.approx(0.75)
    assert grade.info["source"] == "parsed"


async def test_a_server_without_keys_still_gets_the_api_version(judge_server, api, make_claude):
    api.api_key = None  # a local Messages API that wants no key
    model = make_claude(api_key="")
    assert (await model.complete(USER)).text == "PASS"
    [request] = judge_server.requests
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert "x-api-key" not in request.headers


def test_the_older_json_schema_switch_means_the_strongest_dialect(judge_server):
    options: dict[str, Any] = {"base_url": "http://127.0.0.1:1", "api_key": KEY}
    assert get_model("anthropic/c", json_schema=True, **options).structured_output == "tool_use"
    assert get_model("anthropic/c", json_schema=False, **options).structured_output == "prompt"


@pytest.mark.parametrize(
    ("status", "kind", "advice"),
    [
        (403, "permission_error", "no access"),
        (404, "not_found_error", "/v1/messages"),
        (413, "invalid_request_error", "shorten the prompt"),
    ],
)
async def test_final_errors_name_their_type_and_the_fix(api, make_claude, status, kind, advice):
    api.script(api_error(status, kind, "as the API says it"))
    with pytest.raises(ModelCallError, match=kind) as caught:
        await make_claude().complete(USER)
    assert advice in str(caught.value)
    assert caught.value.attempts == 1  # type: ignore[attr-defined]
    assert caught.value.server_message == "as the API says it"  # type: ignore[attr-defined]


async def test_api_errors_500_are_retried(api, make_claude, sleeps):
    api.script(api_error(500, "api_error", "Internal server error"), message("PASS"))
    assert (await make_claude().complete(USER)).text == "PASS"
    assert len(sleeps.delays) == 1
