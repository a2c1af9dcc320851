"""get_model from outside: judges named 'anthropic/...' and 'openai/...' grade on loopback servers.

Built from Python and from a grader file; who answered is on each model's usage record.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from gradewire import InvalidInputError, InvalidTypeError
from gradewire.core import StringThread, Turn
from gradewire.hud import LLMJudgeGrader
from gradewire.judges import BinaryJudgeGrader
from gradewire.models import (
    AnthropicModel,
    JudgeCache,
    OpenAIChatModel,
    ServedModel,
    complete_structured,
    get_model,
)
from gradewire.specs import load_graders
from support.judge_server import JudgeServer, chat
from support.messages_api import MessagesAPI, message


class _Verdict(BaseModel):
    reasoning: str
    verdict: str


SAMPLE = StringThread([Turn("user", "Where is it from?"), Turn("assistant", "From [1].")])
VERDICT = {"reasoning": "cites [1]", "verdict": "PASS"}


@pytest.fixture
def messages_api() -> Iterator[tuple[JudgeServer, MessagesAPI]]:
    api = MessagesAPI(lambda body: message(tool_input=VERDICT, tool_name="BinaryVerdict"))
    with JudgeServer(api) as server:
        yield server, api


@pytest.fixture
def openai_server(judge_server: JudgeServer) -> JudgeServer:
    judge_server.handler = lambda request: chat(
        json.dumps(VERDICT), model="judge-2026-01-01", system_fingerprint="fp_abc123"
    )
    return judge_server


def test_the_provider_picks_the_client_and_the_rest_is_the_served_name():
    local = get_model("openai/Qwen/Qwen2.5-7B-Instruct", base_url="http://127.0.0.1:1/v1")
    assert isinstance(local, OpenAIChatModel)
    assert local.model == "Qwen/Qwen2.5-7B-Instruct"
    assert local.name == "openai/Qwen/Qwen2.5-7B-Instruct"
    claude = get_model("anthropic/claude-haiku-4-5", base_url="http://127.0.0.1:1", api_key="k")
    assert isinstance(claude, AnthropicModel)
    assert (claude.model, claude.name) == ("claude-haiku-4-5", "anthropic/claude-haiku-4-5")


def test_a_name_without_a_known_provider_says_how_to_write_it():
    with pytest.raises(InvalidInputError, match="'openai/gpt-4o-mini'"):
        get_model("gpt-4o-mini")
    with pytest.raises(InvalidInputError, match=r"unknown provider 'Qwen'.*'openai/Qwen/Qwen2"):
        get_model("Qwen/Qwen2.5-7B-Instruct")
    with pytest.raises(InvalidTypeError, match="did you mean 'max_tokens'"):
        get_model("openai/m", base_url="http://127.0.0.1:1/v1", max_token=5)  # type: ignore[arg-type]


async def test_judges_named_by_provider_grade_from_python(messages_api, openai_server):
    server, api = messages_api
    claude = get_model(
        "anthropic/claude-judge", base_url=f"http://127.0.0.1:{server.port}", api_key=api.api_key
    )
    gpt = get_model("openai/judge", base_url=openai_server.base_url)
    for model in (claude, gpt):
        grade = await BinaryJudgeGrader("cites", model, "The answer cites its source").grade(SAMPLE)
        assert grade.value == 1.0
    assert len(api.bodies) == 1
    assert len(openai_server.chat_requests) == 1
    # Who answered, as each answer said: the model name, and OpenAI's fingerprint.
    assert claude.usage.served == {ServedModel("claude-judge-20260101", None): 1}
    assert gpt.usage.served == {ServedModel("judge-2026-01-01", "fp_abc123"): 1}
    assert gpt.usage.calls == 1
    assert gpt.usage.prompt_tokens == 10


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


async def test_judges_named_by_provider_grade_from_a_grader_file(
    messages_api, openai_server, tmp_path, monkeypatch
):
    server, api = messages_api
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{server.port}")
    monkeypatch.setenv("ANTHROPIC_API_KEY", api.api_key)
    graders = load_graders(
        write(
            tmp_path / "graders.toml",
            f"""
[[graders]]
type = "binary_judge"
key = "claude"
criteria = "The answer cites its source"
judge_model = "anthropic/claude-judge"

[[graders]]
type = "binary_judge"
key = "gpt"
criteria = "The answer cites its source"
judge_model = {{ model = "openai/judge", base_url = "{openai_server.base_url}", timeout = 7 }}

[[graders]]
type = "binary_judge"
key = "bare"
criteria = "The answer cites its source"
judge_model = {{ model = "judge", base_url = "{openai_server.base_url}" }}
""",
        )
    )
    claude, gpt, bare = graders
    assert isinstance(claude.model, AnthropicModel)  # type: ignore[attr-defined]
    assert isinstance(gpt.model, OpenAIChatModel)  # type: ignore[attr-defined]
    assert gpt.model.attempt_timeout == 7.0  # type: ignore[attr-defined]
    # A name without a provider is an OpenAI-compatible server's, as files always meant it.
    assert isinstance(bare.model, OpenAIChatModel)  # type: ignore[attr-defined]
    assert bare.model.model == "judge"  # type: ignore[attr-defined]
    grades = [await grader.grade(SAMPLE) for grader in graders]
    assert [grade.value for grade in grades] == [1.0, 1.0, 1.0]
    assert len(api.bodies) == 1
    assert [r.json["model"] for r in openai_server.chat_requests] == ["judge", "judge"]


async def test_hud_judges_by_provider_name(messages_api, monkeypatch):
    server, api = messages_api
    api.answer = lambda body: message(
        tool_input={"reasoning": "met", "verdict": "MET"}, tool_name="RubricVerdict"
    )
    monkeypatch.setenv("GRADEWIRE_JUDGE_BASE_URL", f"http://127.0.0.1:{server.port}")
    monkeypatch.setenv("GRADEWIRE_JUDGE_API_KEY", api.api_key)
    result = await LLMJudgeGrader.grade(
        weight=1.0,
        answer="From [1].",
        criteria=["Cites a source"],
        question="Where is it from?",
        judge="anthropic/claude-judge",
    )
    assert api.bodies, "the judge was called"
    assert api.bodies[0]["tool_choice"]["type"] == "tool"
    assert result.value == pytest.approx(1.0)


async def test_a_cached_answer_keeps_who_answered(openai_server, tmp_path):
    with JudgeCache(tmp_path / "cache.sqlite") as cache:
        first = get_model("openai/judge", base_url=openai_server.base_url, cache=cache)
        again = get_model("openai/judge", base_url=openai_server.base_url, cache=cache)
        messages: Any = [{"role": "user", "content": "verdict?"}]
        _, fresh = await complete_structured(first, messages, _Verdict)
        _, cached = await complete_structured(again, messages, _Verdict)
    assert cached.cached
    assert (cached.model, cached.fingerprint) == (fresh.model, fresh.fingerprint)
    assert again.usage.served == {ServedModel("judge-2026-01-01", "fp_abc123"): 1}
    assert again.usage.cached_calls == 1
