"""Adaptive Harmony's `BinaryJudgeGrader`: verdicts, abstentions and what `get_logs` counts.

The judge model is a script that answers in both protocols: Adaptive Harmony's
``InferenceModel`` (``generate_and_validate``) and gradewire's ``ChatModel`` (``complete``),
so the same test drives either judge. Runs against adaptive-harmony and gradewire alike (see
`compat_targets`).
"""

from __future__ import annotations

import json

import pytest
from ah_target import (
    BinaryJudgeGrader,
    BinaryJudgeShot,
    ChatCompletion,
    IgnoreGradeException,
    StringThread,
    Table,
)

CRITERIA = "The answer is correct"


class ScriptedJudge:
    """Answers each call with the next scripted verdict and reasoning."""

    def __init__(self, verdicts: list[tuple[str, str]]) -> None:
        self.verdicts = list(verdicts)
        self.calls = 0

    def _answer(self) -> str:
        verdict, reasoning = self.verdicts[self.calls]
        self.calls += 1
        # Adaptive Harmony's judge reads "score", gradewire's "verdict".
        return json.dumps({"reasoning": reasoning, "score": verdict, "verdict": verdict})

    # Adaptive Harmony's InferenceModel, as BinaryJudgeGrader uses it
    def get_builder_args(self) -> dict[str, str]:
        return {"path": "model_registry://scripted-judge"}

    def temperature(self, value: float) -> ScriptedJudge:
        return self

    async def generate_and_validate(self, thread, schema):
        text = self._answer()
        return text, schema.model_validate_json(text)

    # gradewire's ChatModel
    async def complete(self, messages, **options):
        return ChatCompletion(text=self._answer(), finish_reason="stop")


def sample(answer: str) -> StringThread:
    return StringThread([("user", "What is 2 + 2?"), ("assistant", answer)])


async def test_pass_fail_and_na_verdicts():
    model = ScriptedJudge([("PASS", "right"), ("FAIL", "wrong"), ("NA", "no sum asked")])
    judge = BinaryJudgeGrader("correct", model, CRITERIA)
    passed = await judge.grade(sample("4"))
    failed = await judge.grade(sample("5"))
    assert (passed.value, passed.reasoning) == (1.0, "right")
    assert (failed.value, failed.reasoning) == (0.0, "wrong")
    with pytest.raises(IgnoreGradeException) as raised:
        await judge.grade(sample("Hello"))
    assert "no sum asked" in raised.value.message
    assert str(raised.value) == raised.value.message


async def test_an_na_verdict_counts_as_an_unscored_sample():
    model = ScriptedJudge([("PASS", "right"), ("FAIL", "wrong"), ("NA", "no sum asked")])
    judge = BinaryJudgeGrader("correct", model, CRITERIA)
    await judge.grade(sample("4"))
    await judge.grade(sample("5"))
    with pytest.raises(IgnoreGradeException):
        await judge.grade(sample("Hello"))
    logs = judge.get_logs(clear=True)
    assert logs["score/mean"] == 0.5
    assert logs["score/count"] == 2
    assert logs["score/scored_samples_count"] == 2
    assert logs["score/unscored_samples_count"] == 1
    # Every table and its headers, as dashboards show them (a column more or less, or a
    # table more, is another dashboard).
    assert {key: value.headers for key, value in logs.items() if isinstance(value, Table)} == {
        "score/scored_samples": ["Prompt", "Reasoning", "Score"],
        "score/unscored_samples": ["Prompt", "Error"],
    }
    assert len(logs["score/scored_samples"].rows) == 2
    unscored = logs["score/unscored_samples"]
    assert len(unscored.rows) == 1
    assert "no sum asked" in unscored["Error"][0]
    # Cleared: nothing counted twice (Adaptive Harmony still lists empty tables).
    assert judge.get_logs().get("score/unscored_samples_count", 0) == 0


async def test_shots_and_temperature_as_adaptive_harmony_passes_them():
    shot = BinaryJudgeShot(sample("5"), "2 + 2 is 4", "FAIL")
    model = ScriptedJudge([("PASS", "right")])
    judge = BinaryJudgeGrader("correct", model, CRITERIA, [shot], temperature=0.0)
    assert (await judge.grade(sample("4"))).value == 1.0
    assert model.calls == 1
