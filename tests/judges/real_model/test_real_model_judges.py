"""Every judge, with default settings, against a real llama.cpp server and a real 135M model.

What a 135M model can deliver is checked, not verdict quality (it passes nearly
everything): with ``structured_output="auto"`` every judge parses a verdict for all the
samples but at most one, every other sample is a counted error (never a 0), and nothing
hangs. Samples are graded one at a time, as the server answers one request at a time;
how many is `real_model_support.N`.
"""

from __future__ import annotations

from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field
from real_model_support import NEEDED, SAMPLES, N, judge_model, samples, within_deadline

import gradewire as gw
from gradewire.hud import LLMJudgeGrader as HudJudge


def assert_accounted(grader: gw.BaseGrader) -> dict[str, Any]:
    logs = grader.get_logs()
    parsed = int(logs["score/count"] + logs["score/abstained_count"])
    errors = int(logs["score/error_count"])
    assert parsed + errors == N  # every sample is scored, abstained or a counted error
    if errors:
        failed = [r for r in grader._logs if "error" in r]
        reasons = "\n".join(str(r["error"])[:300] for r in failed)
    else:
        reasons = ""
    assert parsed >= NEEDED, f"{parsed} of {N} parsed; errors:\n{reasons}"
    assert 0.0 <= logs["score/min"] <= logs["score/max"] <= 1.0
    assert "score/truncated_count" in logs
    return logs


JUDGES = {
    "binary": lambda m: gw.BinaryJudgeGrader("helpful", m, "The response answers the question"),
    "range_logprobs": lambda m: gw.RangeJudgeGrader("clarity", m, "The answer is clear"),
    "range_written": lambda m: gw.RangeJudgeGrader(
        "clarity", m, "The answer is clear", use_logprobs=False
    ),
    "rubric": lambda m: gw.RubricJudgeGrader(
        "rubric", m, ["Answers the question", ("Invents a citation", -1.0)]
    ),
    "faithfulness": lambda m: gw.FaithfulnessGrader("faithful", m),
    "context_relevancy": lambda m: gw.ContextRelevancyGrader("context", m),
    "answer_relevancy": lambda m: gw.AnswerRelevancyGrader("relevant", m),
}


@pytest.mark.parametrize("name", list(JUDGES))
async def test_every_judge_parses_with_default_settings(llama_server, name):
    model = judge_model(llama_server)
    grader = JUDGES[name](model)
    await within_deadline(grader.grade_many(samples(), max_concurrency=1))
    assert_accounted(grader)
    # llama-cpp-python takes a JSON object with a schema: "auto" found and kept it.
    assert model.structured_output_dialect == "json_object_schema"


async def test_logprobs_give_an_expected_score(llama_server):
    grader = gw.RangeJudgeGrader("clarity", judge_model(llama_server), "The answer is clear")
    grades = await within_deadline(grader.grade_many(samples()[:2], max_concurrency=1))
    sources = {g.info["source"] for g in grades if g is not None}
    assert sources == {"logprobs"}  # the server gives OpenAI-shaped logprobs


class Sentiment(BaseModel):
    # Bounded: held to a grammar, this model loops inside a free string about 1 call in 10
    # until max_tokens cuts it (a counted TruncatedOutputError); a bound makes it close it.
    reasoning: str = Field(max_length=300)
    sentiment: Literal["positive", "negative", "neutral"]


async def test_complete_structured(llama_server):
    model = judge_model(llama_server)
    parsed = 0
    for question, answer, _ in (SAMPLES * 2)[:N]:
        text = f"What is the sentiment of this reply to {question!r}? {answer}"
        try:
            found, completion = await within_deadline(
                gw.models.complete_structured(model, [{"role": "user", "content": text}], Sentiment)
            )
        except gw.OutputParserException:
            continue
        parsed += 1
        assert found.sentiment in ("positive", "negative", "neutral")
        assert completion.finish_reason == "stop"
    assert parsed >= NEEDED


async def test_hud_llm_judge_grader(llama_server, monkeypatch):
    # The first sample goes through HUD's route ($GRADEWIRE_JUDGE_BASE_URL and the model
    # name); the others through judge= with the raised timeout.
    monkeypatch.setenv("GRADEWIRE_JUDGE_BASE_URL", llama_server)
    judge = judge_model(llama_server)
    parsed = 0
    for index, (question, answer, _) in enumerate((SAMPLES * 2)[:N]):
        try:
            result = await within_deadline(
                HudJudge.grade(
                    weight=1.0,
                    answer=answer,
                    criteria=["Answers the question", ("Is rude", -1.0)],
                    question=question,
                    model="smollm2",
                    judge=None if index == 0 else judge,
                )
            )
        except gw.OutputParserException:
            continue
        parsed += 1
        assert 0.0 <= result.value <= 1.0
    assert parsed >= NEEDED


async def test_the_judge_cache_answers_a_second_run(llama_server, tmp_path):
    with gw.models.JudgeCache(tmp_path / "judge.sqlite") as cache:
        model = judge_model(llama_server, cache=cache)
        first = gw.BinaryJudgeGrader("helpful", model, "The response answers the question")
        before = await within_deadline(first.grade_many(samples(), max_concurrency=1))
        assert_accounted(first)
        misses = cache.misses
        second = gw.BinaryJudgeGrader("helpful", model, "The response answers the question")
        grades = await within_deadline(second.grade_many(samples(), max_concurrency=1))
        logs = assert_accounted(second)
        assert cache.misses == misses  # nothing asked of the server again
        assert logs["cached_calls/mean"] == 1.0
        assert [g and g.value for g in grades] == [g and g.value for g in before]
