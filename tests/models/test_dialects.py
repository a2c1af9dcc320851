"""Each structured-output dialect against a loopback server that speaks it (judge_dialects)."""

from __future__ import annotations

import copy
import json
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from gradewire import BinaryJudgeGrader, InvalidTypeError, RangeJudgeGrader, StringThread
from gradewire.helpers._structured import pydantic_parse
from gradewire.http import ParameterRefusedError, forget_endpoint_facts
from gradewire.models import JudgeCache, TruncatedOutputError, complete_structured
from gradewire.models._dialects import (
    STRICT_REFUSED,
    apply_dialect,
    strict_response_format,
    without_keywords,
)
from gradewire.models._openai_wire import encode_payload
from gradewire.models._response_format import json_schema_response_format
from support.judge_dialects import dialect_handler, length
from support.judge_server import Request

USER = [{"role": "user", "content": "Is the sky blue?"}]
THREAD = StringThread([("user", "What is 2+2?"), ("assistant", "4")])


class Verdict(BaseModel):
    reasoning: str
    verdict: Literal["PASS", "FAIL"]


class RangeVerdictLike(BaseModel):
    reasoning: str
    score: int = Field(ge=1, le=5)
    tags: list[str] = Field(min_length=1)


def fake_model(request: Request, constrained: Any) -> str:
    """Valid JSON when the server constrains decoding or the prompt shows an example; else
    what small models write when shown a schema: the schema back."""
    prompt = request.json["messages"][-1]["content"]
    if constrained is not None or "shaped like this example" in prompt:
        schema = constrained or {}
        if "score" in json.dumps(schema) or '"score"' in prompt:
            return json.dumps({"reasoning": "fine", "score": 4})
        return json.dumps({"reasoning": "fine", "verdict": "PASS"})
    return "Here is the schema: {'type': 'object'}"


# dialect -> the dialect "auto" settles on, and the requests the first call needs.
SETTLES = {
    "openai": ("json_schema", 1),
    "vllm": ("json_schema", 1),
    "ollama": ("json_schema", 1),
    "llama_cpp_python": ("json_object_schema", 2),
    "none": ("prompt", 4),
    "strict_500": ("prompt", 4),
}


@pytest.mark.parametrize("dialect", sorted(SETTLES))
async def test_auto_finds_the_dialect_and_remembers_it(judge_server, make_judge, dialect):
    judge_server.handler = dialect_handler(dialect, fake_model)
    expected, first_call = SETTLES[dialect]
    model = make_judge(max_attempts=5)
    verdict, _ = await complete_structured(model, USER, Verdict)
    assert verdict.verdict == "PASS"
    assert model.structured_output_dialect == expected
    assert len(judge_server.chat_requests) == first_call  # refusals are never retried
    # Remembered for the endpoint: another client's first call goes straight there.
    again = make_judge(max_attempts=5)
    await complete_structured(again, USER, Verdict)
    assert len(judge_server.chat_requests) == first_call + 1


async def test_llama_cpp_python_gets_a_json_object_with_the_schema(judge_server, make_judge):
    judge_server.handler = dialect_handler("llama_cpp_python", fake_model)
    await complete_structured(make_judge(), USER, Verdict)
    refused, taken = (r.json for r in judge_server.chat_requests)
    assert refused["response_format"]["type"] == "json_schema"
    assert taken["response_format"]["type"] == "json_object"
    assert taken["response_format"]["schema"]["properties"]["verdict"]["enum"] == ["PASS", "FAIL"]


@pytest.mark.parametrize(
    ("server", "setting", "field"),
    [
        ("llama_cpp_python", "json_object_schema", "response_format"),
        ("vllm", "guided_json", "guided_json"),
    ],
)
async def test_a_named_dialect_is_sent_as_named(judge_server, make_judge, server, setting, field):
    judge_server.handler = dialect_handler(server, fake_model)
    await complete_structured(make_judge(structured_output=setting), USER, Verdict)
    [request] = judge_server.chat_requests
    assert field in request.json


async def test_a_named_dialect_the_server_refuses_says_what_to_set(judge_server, make_judge):
    judge_server.handler = dialect_handler("llama_cpp_python", fake_model)
    model = make_judge(structured_output="json_schema", max_attempts=5)
    with pytest.raises(ParameterRefusedError) as caught:
        await complete_structured(model, USER, Verdict)
    message = str(caught.value)
    assert "'response_format'" in message
    assert "HTTP 500" in message
    assert "structured_output='auto'" in message
    assert "json_object_schema" in message
    assert "allow more attempts" not in message  # not advice for a server fault
    assert len(judge_server.chat_requests) == 1
    assert model.structured_output == "json_schema"  # never changed behind the user's back


async def test_the_prompt_dialect_shows_an_example_not_the_schema(judge_server, make_judge):
    judge_server.handler = dialect_handler("none", fake_model)
    await complete_structured(make_judge(structured_output="prompt"), USER, Verdict)
    [request] = judge_server.chat_requests
    prompt = request.json["messages"][-1]["content"]
    assert '{"reasoning": "...", "verdict": "PASS"}' in prompt
    assert '"verdict" is one of "PASS", "FAIL"' in prompt
    assert '"properties"' not in prompt


async def test_logprobs_a_server_refuses_are_dropped_for_the_endpoint(judge_server, make_judge):
    judge_server.handler = dialect_handler("none", fake_model)
    grader = RangeJudgeGrader("clarity", make_judge(), "Clear")
    grade = await grader.grade(THREAD)
    assert grade.info["source"] == "parsed"
    assert grade.value == 0.75
    requests = [r.json for r in judge_server.chat_requests]
    assert [("logprobs" in r, "response_format" in r) for r in requests[-2:]] == [
        (True, False),
        (False, False),
    ]
    await grader.grade(THREAD)
    assert "logprobs" not in judge_server.chat_requests[-1].json  # learnt: asked once


async def test_ollama_ignores_logprobs_and_the_written_score_is_used(judge_server, make_judge):
    judge_server.handler = dialect_handler("ollama", fake_model)
    grade = await RangeJudgeGrader("clarity", make_judge(), "Clear").grade(THREAD)
    assert (grade.info["source"], grade.value) == ("parsed", 0.75)


async def test_the_range_schema_lists_the_valid_scores(judge_server, make_judge):
    judge_server.handler = dialect_handler("llama_cpp_python", fake_model)
    await RangeJudgeGrader("clarity", make_judge(), "Clear", low=1, high=5).grade(THREAD)
    schema = judge_server.chat_requests[-1].json["response_format"]["schema"]
    assert schema["properties"]["score"]["enum"] == [1, 2, 3, 4, 5]


async def test_a_reply_cut_at_the_token_limit_is_a_counted_error(judge_server, make_judge):
    judge_server.handler = length(dialect_handler("openai", fake_model))
    grader = BinaryJudgeGrader("j", make_judge(), "Correct", max_tokens=12)
    with pytest.raises(TruncatedOutputError, match="max_tokens=12"):
        await grader.grade(THREAD)
    assert await grader(THREAD) is None
    logs = grader.get_logs()
    assert (logs["score/error_count"], logs["score/truncated_count"]) == (2, 2)  # both calls
    assert len(judge_server.chat_requests) == 2  # no repair request for a cut reply
    # Opting in parses what came back (here it cannot be repaired into a verdict).
    lenient = BinaryJudgeGrader("k", make_judge(), "Correct", max_tokens=12, truncation="parse")
    assert await lenient(THREAD) is None
    assert lenient.get_logs()["score/truncated_count"] == 0


async def test_judges_log_zero_truncations_when_there_were_none(judge_server, make_judge):
    judge_server.handler = dialect_handler("openai", fake_model)
    grader = BinaryJudgeGrader("j", make_judge(), "Correct")
    await grader(THREAD)
    assert grader.get_logs()["score/truncated_count"] == 0


async def test_the_dialect_is_kept_in_the_cache_file(judge_server, make_judge, tmp_path):
    judge_server.handler = dialect_handler("llama_cpp_python", fake_model)
    path = tmp_path / "judge.sqlite"
    with JudgeCache(path) as cache:
        await complete_structured(make_judge(cache=cache), USER, Verdict)
    assert len(judge_server.chat_requests) == 2
    forget_endpoint_facts()  # a new process knows nothing...
    with JudgeCache(path) as cache:
        model = make_judge(cache=cache)
        await complete_structured(model, [{"role": "user", "content": "Other?"}], Verdict)
        assert model.structured_output_dialect == "json_object_schema"  # ...but the file does
    assert len(judge_server.chat_requests) == 3
    assert judge_server.chat_requests[-1].json["response_format"]["type"] == "json_object"


async def test_max_completion_tokens_for_servers_that_refuse_max_tokens(judge_server, make_judge):
    def reasoning_model(request: Request) -> Any:
        if "max_tokens" in request.json:
            from support.judge_server import error

            return error(
                400,
                "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
                "'max_completion_tokens' instead.",
                param="max_tokens",
            )
        return json.dumps({"reasoning": "ok", "verdict": "PASS"})

    judge_server.handler = reasoning_model
    await complete_structured(make_judge(), USER, Verdict)
    refused, taken = (r.json for r in judge_server.chat_requests)
    assert "max_tokens" in refused
    assert taken["max_completion_tokens"] == 1024


def test_fake_model_answers_parse():
    assert pydantic_parse(fake_model_text(), Verdict).verdict == "PASS"


def fake_model_text() -> str:
    return json.dumps({"reasoning": "fine", "verdict": "PASS"})


# -- the strict form of a JSON-schema response_format, made once per distinct format --------


def strict_afresh(response_format: dict[str, Any]) -> dict[str, Any]:
    """What the json_schema dialect sends, built with no memo."""
    spec = response_format["json_schema"]
    schema = without_keywords(spec["schema"], STRICT_REFUSED)
    return {**response_format, "json_schema": {**spec, "schema": schema}}


def user_format(schema: dict[str, Any], name: str = "answer") -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}


BOUNDED = {
    "type": "object",
    "properties": {
        "minimum": {"type": "integer", "minimum": 0, "maximum": 9},  # a field called minimum
        "items": {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1},
        "kind": {"enum": ["A", "B"]},
    },
    "required": ["minimum", "items", "kind"],
}


def sent(response_format: Any) -> bytes:
    payload: dict[str, Any] = {"model": "m"}
    apply_dialect(payload, "json_schema", response_format)
    return encode_payload(payload)


@pytest.mark.parametrize(
    "response_format",
    [
        user_format(BOUNDED),
        json_schema_response_format(Verdict),
        json_schema_response_format(RangeVerdictLike),
    ],
)
def test_the_strict_memo_sends_what_the_uncached_transform_sends(response_format):
    expected = strict_afresh(copy.deepcopy(response_format))
    first = strict_response_format(response_format)
    assert first == expected
    assert strict_response_format(response_format) is first  # made once
    assert strict_response_format(copy.deepcopy(response_format)) is first  # equal: shared
    assert sent(response_format) == encode_payload({"model": "m", "response_format": expected})


def reference_body(payload: dict[str, Any]) -> bytes:
    """The body as json writes it: UTF-8 as is, or escaped when UTF-8 cannot hold it."""
    try:
        return json.dumps(
            payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False
        ).encode()
    except UnicodeEncodeError:
        return json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()


class Accented(BaseModel):
    """Réponse à donner, en français."""

    raison: str = Field(description="Pourquoi — en une phrase 🙂")
    note: float = Field(ge=0, le=1)


@pytest.mark.parametrize("model", [Verdict, Accented])
@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"a_first": [1, 2.5, None], "seed": 0, "top_k": 20, "zz_last": {"b": 1, "a": "é"}},
        {"response_format_x": True, "response": "before", "nan": float("nan")},
    ],
)
@pytest.mark.parametrize(
    "content", ["plain", "accents é and 🙂", "cut inside an emoji \ud83d", 'quotes " \\ \n']
)
def test_a_shared_format_is_spliced_in_as_the_same_bytes_json_writes(model, extra, content):
    shared = json_schema_response_format(model)
    payload: dict[str, Any] = {
        **extra,
        "model": "m",
        "messages": [{"role": "user", "content": content}],
        "temperature": 0.0,
    }
    apply_dialect(payload, "json_schema", shared)
    strict = payload["response_format"]
    assert strict is strict_response_format(shared)  # the shared, spliced form
    plain = {**payload, "response_format": copy.deepcopy(strict)}  # encoded the whole way
    assert encode_payload(payload) == reference_body(plain) == encode_payload(plain)
    only = {"response_format": strict}  # nothing before or after it
    assert encode_payload(only) == reference_body({"response_format": copy.deepcopy(strict)})


def test_a_spliced_body_still_refuses_what_json_cannot_write():
    strict = strict_response_format(json_schema_response_format(Verdict))
    with pytest.raises(InvalidTypeError, match="cannot be sent as JSON"):
        encode_payload({"response_format": strict, 1: "a key that is not a str"})
    with pytest.raises(InvalidTypeError, match="cannot be sent as JSON"):
        encode_payload({"response_format": strict, "messages": [{1, 2}]})


def test_distinct_schemas_are_not_confused():
    formats = [
        user_format({"type": "object", "properties": {"v": {"enum": [1]}}}),
        user_format({"type": "object", "properties": {"v": {"enum": [True]}}}),  # == [1]
        user_format({"type": "object", "properties": {"v": {"enum": [1.0]}}}),  # == [1]
        user_format({"type": "object", "properties": {"v": {"enum": [2]}}}),
        user_format({"type": "object", "properties": {"v": {"enum": [1]}}}, name="other"),
    ]
    bodies = [sent(f) for f in formats]
    assert len(set(bodies)) == len(formats)
    for response_format, body in zip(formats, bodies, strict=True):
        assert json.loads(body)["response_format"] == json.loads(
            json.dumps(strict_afresh(response_format))
        )


def test_a_user_dict_changed_between_calls_is_not_answered_from_the_memo():
    response_format = user_format(copy.deepcopy(BOUNDED))
    before = sent(response_format)
    schema = response_format["json_schema"]["schema"]
    schema["properties"]["kind"]["enum"].append("C")  # changed in place, same objects
    schema["properties"]["extra"] = {"type": "string", "maxLength": 3}
    after = sent(response_format)
    assert after != before
    got = json.loads(after)["response_format"]["json_schema"]["schema"]
    assert got["properties"]["kind"]["enum"] == ["A", "B", "C"]
    assert got["properties"]["extra"] == {"type": "string"}  # maxLength left out
    assert got == strict_afresh(response_format)["json_schema"]["schema"]
    schema["properties"]["kind"]["enum"].pop()
    del schema["properties"]["extra"]
    assert sent(response_format) == before


def test_a_schema_that_is_not_json_is_refused_as_before():
    bad = user_format({"type": "object", "properties": {"v": {"enum": {1, 2}}}})
    with pytest.raises(InvalidTypeError, match="cannot be sent as JSON"):
        sent(bad)
    with pytest.raises(InvalidTypeError, match="'json_schema' object"):
        sent({"type": "json_schema", "json_schema": None})


async def test_a_changed_user_format_reaches_the_server(judge_server, make_judge):
    judge_server.handler = dialect_handler("openai", fake_model)
    model = make_judge(structured_output="json_schema")
    response_format = user_format(copy.deepcopy(BOUNDED))
    await model.complete(USER, response_format=response_format)
    response_format["json_schema"]["schema"]["properties"]["kind"]["enum"] = ["X"]
    await model.complete(USER, response_format=response_format)
    first, second = (r.json["response_format"] for r in judge_server.chat_requests)
    assert first["json_schema"]["schema"]["properties"]["kind"]["enum"] == ["A", "B"]
    assert second["json_schema"]["schema"]["properties"]["kind"]["enum"] == ["X"]
    assert "minimum" not in second["json_schema"]["schema"]["properties"]["minimum"]
