"""HUD's `LLMJudgeGrader` against a loopback judge, configured as HUD users configure it.

Both sides read ``HUD_API_KEY`` and ``HUD_GATEWAY_URL``: HUD's own judge calls its gateway
with them, and so does gradewire's when no ``GRADEWIRE_JUDGE_BASE_URL`` is set. The judge
server answers in a form both read (HUD's ``criterion_status`` and gradewire's ``verdict``),
deciding by the criterion text it was shown. Runs against ``hud.graders`` and
``gradewire.hud`` alike (see `compat_targets`).
"""

from __future__ import annotations

import json

import pytest
from hud_target import LLMJudgeGrader, SubScore, combine

from conftest import both_formats
from support.judge_scripts import last_user


@pytest.fixture
def judge(hud_gateway, judge_server):
    """A judge that finds a criterion MET when its text contains "met:", else UNMET."""
    hud_gateway.when("met:", both_formats("MET"))
    hud_gateway.when("", both_formats("UNMET"))
    return judge_server


async def test_each_criterion_is_a_child_and_the_value_is_the_weighted_fraction(judge):
    result = await LLMJudgeGrader.compute_score(
        answer="some answer", criteria=["met: mentions Paris", ("names the river", 3.0)]
    )
    assert type(result) is SubScore
    assert (result.name, result.value) == ("LLMJudgeGrader", 0.25)
    assert [(c.name, c.value, c.weight, c.info) for c in result.children] == [
        ("met: mentions Paris", 1.0, 1.0, {"reason": "because"}),
        ("names the river", 0.0, 3.0, {"reason": "because"}),
    ]
    assert result.info["model"] == "claude-sonnet-5-5"
    assert len(judge.chat_requests) == 2


async def test_a_negative_criterion_that_is_met_is_a_penalty(judge):
    result = await LLMJudgeGrader.compute_score(
        answer="some answer", criteria=[("met: positive", 1.0), ("met: error", -0.5)]
    )
    assert result.value == 0.5
    penalties = await LLMJudgeGrader.compute_score(
        answer="x", criteria=[("met: a", 1.0), ("met: b", -2.0)]
    )
    assert penalties.value == 0.0  # clamped at zero


async def test_grade_puts_the_verdicts_on_children_and_records_the_call(judge):
    result = await LLMJudgeGrader.grade(
        weight=1.0, answer="some answer", criteria=["met: correct"], question="What is it?"
    )
    assert result.children == [
        SubScore(name="met: correct", value=1.0, weight=1.0, info={"reason": "because"})
    ]
    assert result.info["_parameters"] == {
        "answer": "some answer",
        "criteria": ["met: correct"],
        "question": "What is it?",
    }
    prompt = last_user(judge.chat_requests[0])
    assert "some answer" in prompt
    assert "What is it?" in prompt


async def test_the_model_name_is_sent_to_the_gateway_with_the_key(judge):
    await LLMJudgeGrader.grade(weight=1.0, answer="a", criteria=["met: x"], model="judge-7b")
    (request,) = judge.chat_requests
    assert request.json["model"] == "judge-7b"
    assert request.headers["authorization"] == "Bearer test-key"


async def test_a_judge_and_a_subscore_combine(judge):
    result = await combine(
        LLMJudgeGrader.grade(weight=0.4, answer="a", criteria=["met: right", "wrong"]),
        SubScore(name="format", value=1.0, weight=0.6),
    )
    assert result.reward == pytest.approx(0.4 * 0.5 + 0.6)
    assert [c.name for c in result.subscores[0].children] == ["met: right", "wrong"]


async def test_a_reply_without_a_verdict_raises(judge_server, judge):
    judge_server.handler = lambda request: json.dumps({"note": "no verdict at all"})
    with pytest.raises(ValueError, match=r"(?i)verdict|json|parse"):
        await LLMJudgeGrader.compute_score(answer="a", criteria=["met: x"])
