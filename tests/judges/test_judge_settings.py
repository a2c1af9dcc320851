"""The judge settings: declared once, checked once, and who decides temperature/max_tokens.

`ModelSettings` says the order: a judge's own setting, else the model's own, else the
structured call's default (0.0 and 1,024). The requests below are the ones the loopback
judge server received.
"""

from __future__ import annotations

import typing

import pytest

from gradewire import (
    BinaryJudgeGrader,
    FaithfulnessGrader,
    InvalidInputError,
    InvalidTypeError,
    RangeJudgeGrader,
    RubricJudgeGrader,
    StringThread,
)
from gradewire.judges import JudgeSettings
from gradewire.models import ModelSettings, StructuredSettings, complete_structured
from gradewire.models._structured_call import DEFAULT_MAX_TOKENS, DEFAULT_TEMPERATURE
from gradewire.specs import build_grader
from support.judge_scripts import verdict

CRITERION = "The answer is correct"
SAMPLE = StringThread([("user", "2+2?"), ("assistant", "4")])


def sent(judge_server) -> tuple[object, object]:
    [request] = judge_server.chat_requests
    return request.json.get("temperature"), request.json.get("max_tokens")


async def test_the_models_own_setting_is_not_overridden_by_a_judge_default(
    judge_server, make_judge
):
    judge_server.handler = lambda request: verdict("PASS")
    model = make_judge(temperature=0.7, max_tokens=300)
    await BinaryJudgeGrader("judge", model, CRITERION).grade(SAMPLE)
    assert sent(judge_server) == (0.7, 300)


async def test_the_judges_own_setting_wins_over_the_models(judge_server, make_judge):
    judge_server.handler = lambda request: verdict("PASS")
    model = make_judge(temperature=0.7, max_tokens=300)
    judge = BinaryJudgeGrader("judge", model, CRITERION, temperature=0.2, max_tokens=50)
    await judge.grade(SAMPLE)
    assert sent(judge_server) == (0.2, 50)


async def test_with_neither_set_a_judge_asks_at_its_defaults(judge_server, make_judge):
    judge_server.handler = lambda request: verdict("PASS")
    await BinaryJudgeGrader("judge", make_judge(), CRITERION).grade(SAMPLE)
    assert sent(judge_server) == (DEFAULT_TEMPERATURE, DEFAULT_MAX_TOKENS) == (0.0, 1024)


async def test_a_model_call_without_settings_leaves_the_servers_defaults(judge_server, make_judge):
    judge_server.handler = lambda request: verdict("PASS")
    await make_judge().complete([{"role": "user", "content": "hi"}])
    assert sent(judge_server) == (None, None)


async def test_complete_structured_takes_the_same_order(judge_server, make_judge):
    from gradewire.judges._binary_judge import BinaryVerdict

    judge_server.handler = lambda request: verdict("PASS")
    messages = [{"role": "user", "content": "judge this"}]
    await complete_structured(make_judge(temperature=0.5), messages, BinaryVerdict)
    assert sent(judge_server) == (0.5, DEFAULT_MAX_TOKENS)
    with pytest.raises(InvalidTypeError, match="temprature"):
        await complete_structured(make_judge(), messages, BinaryVerdict, temprature=0.1)  # type: ignore[call-arg]


async def test_a_spec_sets_the_model_and_the_judge_apart(judge_server, monkeypatch):
    judge_server.handler = lambda request: verdict("PASS")
    monkeypatch.setenv("JUDGE_KEY", "k")
    model = {"model": "m", "base_url": judge_server.base_url, "api_key_env": "JUDGE_KEY"}
    spec = {"type": "binary_judge", "key": "j", "criteria": CRITERION}
    on_model = build_grader({**spec, "judge_model": {**model, "temperature": 0.6}})
    await on_model.grade(SAMPLE)
    assert sent(judge_server) == (0.6, DEFAULT_MAX_TOKENS)
    judge_server.reset()
    on_judge = build_grader({**spec, "judge_model": {**model, "temperature": 0.6}, "max_tokens": 9})
    await on_judge.grade(SAMPLE)
    assert sent(judge_server) == (0.6, 9)


@pytest.mark.parametrize(
    ("settings", "error", "message"),
    [
        ({"temperature": -1.0}, InvalidInputError, "temperature"),
        ({"temperature": float("inf")}, InvalidInputError, "finite"),
        ({"temperature": "hot"}, InvalidTypeError, "temperature"),
        ({"temperature": True}, InvalidTypeError, "temperature"),
        ({"max_tokens": 0}, InvalidInputError, "max_tokens"),
        ({"max_tokens": 2.5}, InvalidTypeError, "max_tokens"),
        ({"system_prompt": " "}, InvalidInputError, "system_prompt"),
        ({"truncation": "cut"}, InvalidInputError, "truncation"),
        ({"sample_tables": "yes"}, InvalidTypeError, "sample_tables"),
        ({"temprature": 0.1}, InvalidTypeError, "did you mean 'temperature'"),
    ],
)
def test_every_judge_checks_the_same_settings_the_same_way(make_judge, settings, error, message):
    model = make_judge()
    makers = [
        lambda: BinaryJudgeGrader("b", model, CRITERION, **settings),
        lambda: RangeJudgeGrader("r", model, CRITERION, **settings),
        lambda: RubricJudgeGrader("u", model, ["Correct"], **settings),
        lambda: FaithfulnessGrader(model=model, language="fr", **settings),
    ]
    for make in makers:
        with pytest.raises(error, match=message):
            make()


def test_the_model_checks_its_settings_with_the_same_declaration(make_judge):
    with pytest.raises(InvalidInputError, match="max_tokens"):
        make_judge(max_tokens=0)
    with pytest.raises(InvalidTypeError, match="unexpected keyword argument 'top_k'"):
        make_judge(top_k=5)


def test_one_declaration_feeds_the_judges_the_model_and_the_specs():
    judge = typing.get_type_hints(JudgeSettings)
    structured = typing.get_type_hints(StructuredSettings)
    model = typing.get_type_hints(ModelSettings)
    assert set(model) == {"temperature", "max_tokens"}
    assert set(structured) == {*model, "truncation"}
    assert set(judge) == {*structured, "system_prompt", "sample_tables"}
    from gradewire.specs._grader_specs import BinaryJudgeSpec, JudgeModelSpec

    assert set(judge) <= set(BinaryJudgeSpec.model_fields)
    assert set(model) <= set(JudgeModelSpec.model_fields)


def test_a_judge_keeps_what_was_set_and_leaves_the_rest_to_the_model(make_judge):
    judge = BinaryJudgeGrader("judge", make_judge(), CRITERION, truncation="parse")
    assert (judge.temperature, judge.max_tokens, judge.truncation) == (None, None, "parse")
    assert judge.sample_tables is True
    assert (
        BinaryJudgeGrader("j", make_judge(), CRITERION, sample_tables=False).sample_tables is False
    )


async def test_a_judge_counts_each_abstention_once_however_it_is_called(judge_server, make_judge):
    from gradewire import CombinedGrader, IgnoreGradeException

    judge_server.handler = lambda request: verdict("NA", "no sum was asked")
    judge = BinaryJudgeGrader("judge", make_judge(), CRITERION)
    with pytest.raises(IgnoreGradeException, match="no sum was asked"):
        await judge.grade(SAMPLE)  # a direct call, as Adaptive Harmony's code makes
    assert await judge(SAMPLE) is None
    assert await judge.grade_many([SAMPLE]) == [None]
    combined = CombinedGrader("all", [judge])
    assert await combined(SAMPLE) is None
    logs = judge.get_logs()
    assert logs["score/abstained_count"] == 4
    assert logs["score/unscored_samples_count"] == 4
    assert combined.get_logs()["score/abstained_count"] == 1
