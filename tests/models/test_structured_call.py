"""complete_structured over real HTTP: JSON schema, the prompt fallback, one repair."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import pytest
from pydantic import BaseModel, RootModel

from gradewire import InvalidTypeError, ModelCallError, OutputParserException
from gradewire.models import ChatCompletion, ChatMessage, Usage
from gradewire.models._response_format import json_schema_response_format
from gradewire.models._structured_call import complete_structured
from support.judge_server import Request, chat, error

USER: list[ChatMessage] = [{"role": "user", "content": "Does the answer cite its source?"}]


class Verdict(BaseModel):
    reasoning: str
    verdict: Literal["PASS", "FAIL"]


class Scored(BaseModel):
    score: int
    note: str = ""


GOOD = json.dumps({"reasoning": "cites [1]", "verdict": "PASS"})


async def test_asks_with_a_json_schema_and_parses(judge_server, make_judge):
    judge_server.script(chat(GOOD, prompt_tokens=30, completion_tokens=12))
    verdict, completion = await complete_structured(make_judge(), USER, Verdict, temperature=0)
    assert verdict == Verdict(reasoning="cites [1]", verdict="PASS")
    assert completion.usage == Usage(30, 12)
    [request] = judge_server.chat_requests
    body = request.json
    assert body["messages"] == USER  # the schema travels in response_format, not the prompt
    assert body["temperature"] == 0
    format_ = body["response_format"]
    assert format_["type"] == "json_schema"
    assert format_["json_schema"]["name"] == "Verdict"
    assert format_["json_schema"]["strict"] is True
    schema = format_["json_schema"]["schema"]
    assert set(schema["properties"]) == {"reasoning", "verdict"}
    assert schema["additionalProperties"] is False


def test_strict_only_when_every_field_is_required():
    format_ = json_schema_response_format(Scored)
    assert format_ is not None
    assert format_["json_schema"]["strict"] is False
    assert format_["json_schema"]["schema"]["additionalProperties"] is False

    class Nested(BaseModel):
        items: list[Verdict]

    nested = json_schema_response_format(Nested)
    assert nested is not None
    assert nested["json_schema"]["strict"] is True
    assert nested["json_schema"]["schema"]["$defs"]["Verdict"]["additionalProperties"] is False


def reject_response_format(request: Request) -> Any:
    if "response_format" in request.json:
        return error(400, "response_format of type json_schema is not supported")
    return chat(GOOD)


async def test_a_server_without_response_format_is_asked_in_the_next_dialects(
    judge_server, make_judge
):
    judge_server.handler = reject_response_format  # and ignores fields it does not know
    model = make_judge()
    assert model.structured_output_dialect is None
    verdict, _ = await complete_structured(model, USER, Verdict)
    assert verdict.verdict == "PASS"
    assert model.structured_output_dialect == "guided_json"  # remembered
    as_schema, as_object, guided = (r.json for r in judge_server.chat_requests)
    assert as_schema["response_format"]["type"] == "json_schema"
    assert as_object["response_format"] == {
        "type": "json_object",
        "schema": json_schema_response_format(Verdict)["json_schema"]["schema"],  # type: ignore[index]
    }
    assert "response_format" not in guided
    assert guided["guided_json"]["properties"]["verdict"]["enum"] == ["PASS", "FAIL"]
    # guided_json is ignored silently by servers that do not know it: the example goes too.
    [message] = guided["messages"]  # appended to the user's turn, not a second turn
    assert message["content"].startswith(USER[0]["content"])
    assert '"verdict": "PASS"' in message["content"]
    assert "JSON schema" not in message["content"]

    await complete_structured(model, USER, Verdict)
    assert len(judge_server.chat_requests) == 4  # the next call goes straight to guided_json
    assert "guided_json" in judge_server.chat_requests[-1].json


async def test_a_model_said_to_support_json_schema_does_not_fall_back(judge_server, make_judge):
    judge_server.handler = reject_response_format
    model = make_judge(json_schema=True)
    with pytest.raises(ModelCallError, match="not supported"):
        await complete_structured(model, USER, Verdict)
    assert len(judge_server.chat_requests) == 1


async def test_a_model_said_not_to_support_it_never_gets_response_format(judge_server, make_judge):
    judge_server.script(chat(GOOD))
    await complete_structured(make_judge(json_schema=False), USER, Verdict)
    assert "response_format" not in judge_server.chat_requests[0].json


async def test_other_400s_are_raised_and_not_remembered(judge_server, make_judge):
    judge_server.script(error(400, "max_tokens is too large"))
    model = make_judge()
    with pytest.raises(ModelCallError, match="max_tokens is too large"):
        await complete_structured(model, USER, Verdict)
    assert model.json_schema is None
    assert len(judge_server.chat_requests) == 1


async def test_one_repair_request_fixes_a_bad_answer(judge_server, make_judge):
    judge_server.script(
        chat("I think it passes.", prompt_tokens=20, completion_tokens=5),
        chat(f"```json\n{GOOD}\n```", prompt_tokens=45, completion_tokens=15),
    )
    verdict, completion = await complete_structured(make_judge(), USER, Verdict)
    assert verdict.verdict == "PASS"
    assert completion.usage == Usage(65, 20)  # both calls
    first, repair = (r.json for r in judge_server.chat_requests)
    assert repair["response_format"] == first["response_format"]
    question, bad, instruction = repair["messages"]
    assert question == USER[0]
    assert bad == {"role": "assistant", "content": "I think it passes."}
    assert instruction["role"] == "user"
    assert "no JSON object found" in instruction["content"]  # the parse error, in a line
    assert "\n" not in instruction["content"]  # constrained: no format text to repeat
    assert repair["temperature"] >= 0.7  # not the same question at temperature 0 again


async def test_a_second_bad_answer_is_an_output_parser_exception(judge_server, make_judge):
    judge_server.script(chat('{"verdict": "MAYBE"}'), chat('{"verdict": "UNSURE"}'))
    with pytest.raises(OutputParserException, match="even after one repair") as caught:
        await complete_structured(make_judge(), USER, Verdict)
    assert caught.value.llm_output == '{"verdict": "UNSURE"}'
    assert "verdict" in caught.value.message
    assert len(judge_server.chat_requests) == 2


async def test_a_schema_whose_root_is_not_an_object_goes_in_the_prompt(judge_server, make_judge):
    class Scores(RootModel[list[int]]):
        pass

    judge_server.script(chat("[1, 2, 3]"))
    scores, _ = await complete_structured(make_judge(), USER, Scores)
    assert scores.root == [1, 2, 3]
    body = judge_server.chat_requests[0].json
    assert "response_format" not in body
    assert "shaped like this example:\n[0]" in body["messages"][-1]["content"]


async def test_logprobs_and_max_tokens_are_passed_on(judge_server, make_judge):
    judge_server.script(chat(GOOD, logprobs=[("{", -0.01, [])]))
    _, completion = await complete_structured(
        make_judge(), USER, Verdict, max_tokens=64, logprobs=3
    )
    body = judge_server.chat_requests[0].json
    assert (body["max_tokens"], body["top_logprobs"]) == (64, 3)
    assert completion.logprobs is not None


class EchoModel:
    """A ChatModel that is not OpenAI's: answers from a list, remembers what it was asked."""

    def __init__(self, answers: list[str]) -> None:
        self.answers = answers
        self.asked: list[tuple[list[ChatMessage], Mapping[str, Any] | None]] = []

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        response_format: Mapping[str, Any] | None = None,
        logprobs: int | None = None,
    ) -> ChatCompletion:
        self.asked.append((list(messages), response_format))
        return ChatCompletion(self.answers.pop(0), Usage(1, 1), cached=True)


async def test_any_chat_model_works():
    model = EchoModel([GOOD])
    verdict, completion = await complete_structured(model, USER, Verdict)
    assert verdict.verdict == "PASS"
    assert completion.cached
    assert model.asked[0][1] is not None  # no json_schema attribute: unknown, so it is tried


async def test_the_schema_must_be_a_pydantic_class():
    with pytest.raises(InvalidTypeError, match="BaseModel subclass"):
        await complete_structured(EchoModel([]), USER, dict)  # type: ignore[type-var]
