"""gradewire.hud's models meet the native Grade tree: from_grade / to_grade, and combine."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

import gradewire
from gradewire import BaseGrader, Grade, GradingError, StringThread
from gradewire.hud import EvaluationResult, SubScore, combine
from gradewire.hud._judge import shared_judge_model


def tree() -> Grade:
    return Grade(
        0.75,
        "reward",
        "tests pass, style so-so",
        children=[
            Grade(1.0, "tests", "all 12 pass", weight=0.5, info={"exit_code": 0}),
            Grade(0.5, "style", weight=0.5, children=[Grade(0.5, "lint", weight=1.0)]),
        ],
        info={"run": 7},
    )


def test_a_grade_tree_becomes_subscores_and_back_unchanged():
    native = tree()
    node = SubScore.from_grade(native)
    assert node.model_dump() == {
        "name": "reward",
        "weight": 1.0,
        "value": 0.75,
        "children": [
            {
                "name": "tests",
                "weight": 0.5,
                "value": 1.0,
                "children": None,
                "info": {"exit_code": 0, "reasoning": "all 12 pass"},
            },
            {
                "name": "style",
                "weight": 0.5,
                "value": 0.5,
                "children": [
                    {"name": "lint", "weight": 1.0, "value": 0.5, "children": None, "info": None}
                ],
                "info": None,
            },
        ],
        "info": {"run": 7, "reasoning": "tests pass, style so-so"},
    }
    assert node.to_grade() == native
    assert SubScore.from_grade(node.to_grade()) == node


def test_hud_code_can_change_the_tree_before_it_goes_native():
    node = SubScore.from_grade(tree())
    node.children[1].value = 0.0  # HUD code mutates its models
    node.info["reviewed"] = True
    back = node.to_grade()
    assert back.children[1].value == 0.0
    assert dict(back.info) == {"run": 7, "reviewed": True}
    assert back.reasoning == "tests pass, style so-so"


def test_an_unbounded_reward_has_no_subscore_form():
    with pytest.raises(ValidationError, match="less than or equal to 1"):
        SubScore.from_grade(Grade(3.0, "reward"))
    with pytest.raises(TypeError, match="gradewire Grade"):
        SubScore.from_grade(0.5)  # type: ignore[arg-type]


def test_a_result_from_a_grade_and_back():
    native = tree()
    result = EvaluationResult.from_grade(native)
    assert (result.reward, result.content, result.info) == (
        0.75,
        "tests pass, style so-so",
        {"run": 7},
    )
    assert [s.name for s in result.subscores] == ["tests", "style"]
    assert result.isError is False
    back = result.to_grade()
    assert (back.value, back.grader_key, back.reasoning) == (0.75, "reward", native.reasoning)
    assert back.children == native.children
    assert result.to_grade("episode").grader_key == "episode"


def test_a_result_marked_as_an_error_has_no_native_grade():
    failed = EvaluationResult(reward=0.0, isError=True, content="the judge timed out")
    with pytest.raises(GradingError, match="the judge timed out"):
        failed.to_grade()


async def test_a_native_grader_answers_inside_combine():
    async def length(sample: StringThread) -> float:
        return min(len(sample.last_content()) / 10, 1.0)

    native = BaseGrader.from_function("length", length)
    sample = StringThread([("user", "q"), ("assistant", "twelve chars")])
    with pytest.warns(UserWarning, match="weights sum to 2.0000"):  # HUD's warning
        result = await combine(
            native.grade(sample),  # an awaitable of a native Grade, weight 1.0
            Grade(0.0, "format", weight=0.0),
            SubScore(name="manual", value=0.5, weight=1.0),
        )
    assert [(s.name, s.value, s.weight) for s in result.subscores] == [
        ("length", 1.0, 0.5),
        ("format", 0.0, 0.0),
        ("manual", 0.5, 0.5),
    ]
    assert result.reward == 0.75
    assert native.get_logs()["score/count"] == 1


async def test_combine_ends_the_other_calls_when_one_fails():
    import asyncio

    cancelled = asyncio.Event()

    async def slow() -> SubScore:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return SubScore(name="slow", value=1.0)

    async def broken() -> SubScore:
        raise RuntimeError("judge down")

    with pytest.raises(RuntimeError, match="judge down"):
        await combine(slow(), broken())
    assert cancelled.is_set()


def test_hud_names_are_hud_only():
    # The native score tree is Grade; HUD's SubScore is a pydantic model converted at the
    # boundary, and the root does not offer a second object under HUD's name.
    assert not isinstance(SubScore(name="x", value=1.0), Grade)
    assert SubScore.from_grade(Grade(1.0, "x")).to_grade() == Grade(1.0, "x")
    with pytest.raises(AttributeError, match=r"from gradewire\.hud import SubScore"):
        gradewire.SubScore  # noqa: B018


def test_the_judge_endpoint_follows_hud_settings(monkeypatch):
    for name in ("GRADEWIRE_JUDGE_BASE_URL", "GRADEWIRE_JUDGE_API_KEY", "HUD_GATEWAY_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "openai-key")
    monkeypatch.delenv("HUD_API_KEY", raising=False)
    assert shared_judge_model("m").base_url == "http://127.0.0.1:1/v1"
    monkeypatch.setenv("HUD_API_KEY", "hud-key")  # HUD's judge would use its gateway now
    assert shared_judge_model("m").base_url == "https://inference.hud.ai"
    monkeypatch.setenv("HUD_GATEWAY_URL", "http://127.0.0.1:2/v1")
    assert shared_judge_model("m").base_url == "http://127.0.0.1:2/v1"
    monkeypatch.setenv("GRADEWIRE_JUDGE_BASE_URL", "http://127.0.0.1:3/v1")
    assert shared_judge_model("m").base_url == "http://127.0.0.1:3/v1"
