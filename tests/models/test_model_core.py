"""The client core's contract: declared profiles, attempt_timeout, usage, one path per answer."""

from __future__ import annotations

import asyncio
import json
import pickle
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from pydantic import BaseModel

from gradewire import InvalidInputError, InvalidTypeError
from gradewire.http import ModelHTTPError
from gradewire.models import (
    ChatCompletion,
    ChatMessage,
    ModelClient,
    ModelProfile,
    OpenAIChatModel,
    ServedModel,
    Usage,
    complete_structured,
)
from gradewire.openai._embeddings import EmbeddingsClient
from support.judge_server import chat, error

USER: list[ChatMessage] = [{"role": "user", "content": "verdict?"}]


class Verdict(BaseModel):
    reasoning: str
    verdict: str


GOOD = json.dumps({"reasoning": "r", "verdict": "PASS"})


def test_timeout_is_the_older_name_of_attempt_timeout():
    with pytest.warns(DeprecationWarning, match="attempt_timeout=") as caught:
        model = OpenAIChatModel("m", base_url="http://127.0.0.1:1/v1", timeout=5)
    assert caught[0].filename == __file__  # the warning points at the caller's line
    assert model.attempt_timeout == 5.0
    with pytest.warns(DeprecationWarning, match="attempt_timeout"):
        assert model.timeout == 5.0
    with pytest.raises(InvalidInputError, match="attempt_timeout= only"):
        OpenAIChatModel("m", base_url="http://127.0.0.1:1/v1", timeout=5, attempt_timeout=5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new name warns about nothing
        assert OpenAIChatModel("m", base_url="http://127.0.0.1:1/v1").attempt_timeout == 60.0
    with pytest.warns(DeprecationWarning, match="EmbeddingsClient"):
        embeddings = EmbeddingsClient("e", base_url="http://127.0.0.1:1/v1", timeout=3)
    assert embeddings.attempt_timeout == 3.0


def test_a_pickled_model_keeps_its_attempt_timeout_and_warns_about_nothing():
    model = OpenAIChatModel("m", base_url="http://127.0.0.1:1/v1", attempt_timeout=7)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        copy = pickle.loads(pickle.dumps(model))
    assert copy.attempt_timeout == 7.0


async def test_the_profile_says_what_the_endpoint_taught(judge_server, make_judge):
    model = make_judge(temperature=0.2)
    profile = model.profile
    assert profile.negotiates
    assert profile.dialect is None  # unknown until the first structured call
    assert profile.settings == {"temperature": 0.2}
    assert profile.logprobs

    def refuse(request: Any) -> Any:
        body = request.json
        if "response_format" in body:
            return error(400, "response_format is not supported")
        if "logprobs" in body:
            return error(400, "logprobs are not supported", param="logprobs")
        return chat(GOOD)

    judge_server.handler = refuse
    await complete_structured(model, USER, Verdict, logprobs=3)
    learnt = model.profile
    assert learnt.dialect == "guided_json"
    assert learnt.shows_example(learnt.dialect)
    assert not learnt.logprobs  # refused: no longer asked for
    assert model.json_schema is False  # the older view of the same fact


class Refusing:
    """A ChatModel of one's own, without a profile, whose server refuses response_format."""

    def __init__(self) -> None:
        self.formats: list[Mapping[str, Any] | None] = []

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        response_format: Mapping[str, Any] | None = None,
        logprobs: int | None = None,
    ) -> ChatCompletion:
        self.formats.append(response_format)
        if response_format is not None:
            raise ModelHTTPError(
                "HTTP 400: response_format is not supported",
                endpoint="x",
                status=400,
                server_message="response_format is not supported",
            )
        return ChatCompletion(GOOD, Usage(1, 1))


async def test_a_model_without_a_profile_falls_back_once_and_is_not_written_on():
    model = Refusing()
    await complete_structured(model, USER, Verdict)
    await complete_structured(model, USER, Verdict)
    assert [f is not None for f in model.formats] == [True, False, False]
    assert not hasattr(model, "json_schema")  # remembered apart, never set on the model


async def test_a_model_can_declare_its_profile():
    class Declared(Refusing):
        profile = ModelProfile(dialect="prompt", settings={"max_tokens": 77})

        def __init__(self) -> None:
            super().__init__()
            self.max_tokens_seen: list[int | None] = []

        async def complete(self, messages: Any, **options: Any) -> ChatCompletion:
            self.max_tokens_seen.append(options.get("max_tokens"))
            return await super().complete(messages, **options)

    model = Declared()
    await complete_structured(model, USER, Verdict)
    assert model.formats == [None]  # declared prompt-only: never sent a schema
    assert model.max_tokens_seen == [77]  # its own setting, from its profile


async def test_every_answer_is_counted_once_with_who_answered(judge_server, make_judge):
    judge_server.handler = lambda request: chat(
        "ok", model="snap-1", system_fingerprint="fp_1", prompt_tokens=3, completion_tokens=2
    )
    model = make_judge()
    # Two identical calls in flight share one request; both answers are counted.
    answers = await asyncio.gather(model.complete(USER), model.complete(USER))
    assert len(judge_server.chat_requests) == 1
    assert sorted(a.cached for a in answers) == [False, True]
    assert answers[0].fingerprint == "fp_1"
    usage = model.usage
    assert (usage.calls, usage.cached_calls) == (2, 1)
    assert (usage.prompt_tokens, usage.completion_tokens) == (6, 4)
    assert usage.served == {ServedModel("snap-1", "fp_1"): 2}


def test_the_core_alone_says_how_to_make_a_model():
    with pytest.raises(InvalidTypeError, match="get_model"):
        ModelClient("m", base_url="http://127.0.0.1:1")
