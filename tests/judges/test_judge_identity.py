"""A judge's identity: equal for equal configurations, different when anything that decides
its verdicts changes.

The fields are read from the constructors (and from the OpenAI SDK's grader types, and
`JudgeSettings`), not listed by hand: a field a judge gains fails `test_every_field_is_decided`
until it is given a strategy here (it decides verdicts) or a reason (it does not).
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gradewire import judges
from gradewire.judges import (
    AnswerRelevancyGrader,
    BinaryJudgeGrader,
    ContextRelevancyGrader,
    FaithfulnessGrader,
    JudgeGrader,
    JudgePanel,
    JudgeSettings,
    PairwiseJudgeGrader,
    RangeJudgeGrader,
    RubricJudgeGrader,
)
from gradewire.judges._identity import identity_facts, judge_identity
from gradewire.models import OpenAIChatModel
from gradewire.models._dialects import OPENAI_DIALECTS
from gradewire.openai import openai_grader

BASE_URL = "http://127.0.0.1:9/v1"  # never called: identities are computed offline

text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1).filter(
    str.strip
)
shot = st.fixed_dictionaries(
    {
        "question": text,
        "completion": st.text(max_size=20),
        "verdict": st.sampled_from(["PASS", "FAIL", "NA"]),
        "reasoning": st.text(max_size=20),
    }
)

# The fields that decide a judge's verdicts, each with values to try.
VERDICT_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "criteria": text,
    "shots": st.lists(shot, max_size=2),
    "low": st.integers(-5, 4),
    "high": st.integers(6, 20),
    "use_logprobs": st.booleans(),
    "pass_threshold": st.one_of(st.none(), st.floats(0, 1, allow_subnormal=False)),
    "swap": st.booleans(),
    "seed": st.integers(-(2**40), 2**40),
    "other_key": st.from_regex(r"[a-z_]{1,12}", fullmatch=True),
    "language": st.sampled_from([None, "en", "fr", "de", "Klingon"]),
    "temperature": st.floats(0, 2, allow_subnormal=False),
    "max_tokens": st.integers(1, 100_000),
    "truncation": st.sampled_from(["error", "parse"]),
    "system_prompt": text,
    "aggregate": st.sampled_from(["majority", "mean", "median", "min", "max"]),
    "quorum": st.integers(1, 3),
    "tie_break": st.sampled_from(["abstain", "low", "high", "mean"]),
    "judges": text,  # the criteria of the panel's first judge
}

# The fields that do not, and why.
NOT_VERDICT_FIELDS = {
    "grader_key": "a label for logs and dashboards",
    "sample_tables": "what is logged, not what is judged",
    "max_log_records": "what is logged, not what is judged",
    "model": "the model's own fields are tested apart (MODEL_FIELDS)",
}

MODEL_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "model": text,
    "temperature": st.floats(0, 2, allow_subnormal=False),
    "max_tokens": st.integers(1, 100_000),
    "structured_output": st.sampled_from(["auto", *OPENAI_DIALECTS.order]),
    "extra_body": st.dictionaries(
        st.sampled_from(["seed", "top_k", "top_p"]), st.integers(0, 100), max_size=2
    ),
}
MODEL_NOT_VERDICT = {
    "base_url": "where the server is, not who answers (served models are recorded apart)",
    "api_key": "a credential",
    "attempt_timeout": "how long to wait",
    "timeout": "how long to wait (older name)",
    "max_concurrency": "how many calls at once",
    "max_attempts": "how often to retry",
    "retry": "how to retry",
    "cache": "where answers are kept (a cached answer is the same answer)",
    "headers": "transport",
    "http_client": "transport",
    "max_response_bytes": "a bound on the transport",
    "json_schema": "the older name of structured_output (tested through it)",
}

# What each judge needs besides the field tried.
BASE: dict[type, dict[str, Any]] = {
    BinaryJudgeGrader: {"criteria": "Answers the question"},
    RangeJudgeGrader: {"criteria": "Helpful", "low": 1, "high": 5},
    RubricJudgeGrader: {"criteria": "Correct"},
    PairwiseJudgeGrader: {"criteria": "More helpful"},
    FaithfulnessGrader: {},
    ContextRelevancyGrader: {},
    AnswerRelevancyGrader: {},
    JudgePanel: {"judges": "Answers the question"},
}

JUDGES = sorted(
    (
        getattr(judges, name)
        for name in judges.__all__
        if isinstance(getattr(judges, name), type)
        and issubclass(getattr(judges, name), (JudgeGrader, JudgePanel))
        and not inspect.isabstract(getattr(judges, name))
    ),
    key=lambda kind: kind.__name__,
)


def fields_of(kind: type) -> list[str]:
    names = []
    for name, parameter in inspect.signature(kind.__init__).parameters.items():
        if name == "self":
            continue
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            names += list(JudgeSettings.__annotations__)
        else:
            names.append(name)
    return names


def model(**overrides: Any) -> OpenAIChatModel:
    return OpenAIChatModel(**{"model": "judge-1", "base_url": BASE_URL, **overrides})


def build(kind: type, **overrides: Any) -> Any:
    config = {**BASE[kind], **overrides}
    key = config.pop("grader_key", "judge")
    if kind is JudgePanel:
        first = config.pop("judges")
        members = [
            BinaryJudgeGrader("a", model(), first),
            BinaryJudgeGrader("b", model(), "Is polite"),
            BinaryJudgeGrader("c", model(), "Is short"),
        ]
        return JudgePanel(key, members, **config)
    return kind(key, model(**config.pop("model_fields", {})), **config)


CASES = [(kind, name) for kind in JUDGES for name in fields_of(kind)]


def test_every_judge_is_tried() -> None:
    assert set(JUDGES) == set(BASE)


@pytest.mark.parametrize(("kind", "name"), CASES, ids=[f"{k.__name__}.{n}" for k, n in CASES])
def test_every_field_is_decided(kind: type, name: str) -> None:
    assert (name in VERDICT_FIELDS) != (name in NOT_VERDICT_FIELDS), (
        f"{kind.__name__}({name}=...) is a new field: add it to VERDICT_FIELDS (it decides "
        "verdicts, so the identity must change with it) or NOT_VERDICT_FIELDS, with why"
    )


def test_every_model_field_is_decided() -> None:
    declared = [
        name
        for name, parameter in inspect.signature(OpenAIChatModel.__init__).parameters.items()
        if name != "self" and parameter.kind is not inspect.Parameter.VAR_KEYWORD
    ]
    declared += ["temperature", "max_tokens"]
    for name in declared:
        assert (name in MODEL_FIELDS) != (name in MODEL_NOT_VERDICT), name


def _two(data: st.DataObject, strategy: st.SearchStrategy[Any]) -> tuple[Any, Any]:
    first = data.draw(strategy)
    second = data.draw(strategy.filter(lambda value: value != first))
    return first, second


def _valid(kind: type, name: str, value: Any) -> dict[str, Any]:
    if name == "shots":
        value = [
            {"thread_or_question": s["question"], **{k: v for k, v in s.items() if k != "question"}}
            for s in value
        ]
    return {name: value}


@pytest.mark.parametrize(("kind", "name"), CASES, ids=[f"{k.__name__}.{n}" for k, n in CASES])
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(data=st.data())
def test_identity_follows_every_field(kind: type, name: str, data: st.DataObject) -> None:
    if name in NOT_VERDICT_FIELDS:
        if name == "model":
            return
        values = {
            "grader_key": ("judge", "other-key"),
            "sample_tables": (True, False),
            "max_log_records": (None, 10),
        }[name]
        one, two = (build(kind, **{name: value}) for value in values)
        assert one.identity == two.identity
        return
    first, second = _two(data, VERDICT_FIELDS[name])
    one = build(kind, **_valid(kind, name, first))
    same = build(kind, **_valid(kind, name, first))
    other = build(kind, **_valid(kind, name, second))
    assert one.identity == same.identity
    assert one.identity != other.identity, (first, second)


@pytest.mark.parametrize("name", sorted(MODEL_FIELDS))
@settings(max_examples=6, deadline=None)
@given(data=st.data())
def test_identity_follows_every_model_field(name: str, data: st.DataObject) -> None:
    first, second = _two(data, MODEL_FIELDS[name])
    one = BinaryJudgeGrader("j", model(**{name: first}), "Answers")
    same = BinaryJudgeGrader("j", model(**{name: first}), "Answers")
    other = BinaryJudgeGrader("j", model(**{name: second}), "Answers")
    assert one.identity == same.identity
    assert one.identity != other.identity


def test_transport_settings_leave_the_identity() -> None:
    one = BinaryJudgeGrader("j", model(), "Answers")
    moved = BinaryJudgeGrader(
        "j",
        model(base_url="http://127.0.0.1:10/v1", api_key="k", max_concurrency=3, max_attempts=2),
        "Answers",
    )
    assert one.identity == moved.identity


def test_a_prompt_template_change_changes_the_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    # No attribute changes: the prompt the judge sends does (a gradewire upgrade).
    from gradewire.judges import _binary_judge

    judge = BinaryJudgeGrader("j", model(), "Answers")
    before = judge.identity
    original = _binary_judge.binary_prompt
    monkeypatch.setattr(
        _binary_judge, "binary_prompt", lambda *a, **k: original(*a, **k) + "\nBe strict."
    )
    assert BinaryJudgeGrader("j", model(), "Answers").identity != before


def test_identity_is_stable_and_readable() -> None:
    judge = BinaryJudgeGrader("j", model(), "Answers")
    assert judge.identity == judge_identity(judge)
    assert judge.identity.startswith("BinaryJudgeGrader-")
    assert len(judge.identity.split("-")[1]) == 16
    facts = identity_facts(judge)
    assert facts["model"]["name"] == "judge-1"
    assert "grader_key" not in facts["config"]
    # The prompt as sent is part of it: the criterion reaches the model's messages.
    assert "Answers" in facts["prompt"]["messages"][-1]["content"]


def test_runtime_state_leaves_the_identity() -> None:
    judge = RangeJudgeGrader("r", model(), "Helpful", low=1, high=5, use_logprobs=True)
    before = judge.identity
    judge.logprobs_refused = True
    judge.add_log({"score": 1.0})
    assert judge.identity == before


def score_config(**extra: Any) -> dict[str, Any]:
    return {
        "type": "score_model",
        "name": "judge",
        "model": "gpt-4o-2024-08-06",
        "input": [{"role": "user", "content": "Grade {{sample.output_text}}"}],
        "range": [0, 10],
        "sampling_params": {"temperature": 0.2, "max_completions_tokens": 300, "seed": 7},
        **extra,
    }


def label_config(**extra: Any) -> dict[str, Any]:
    return {
        "type": "label_model",
        "name": "judge",
        "model": "gpt-4o-2024-08-06",
        "input": [{"role": "user", "content": "Label {{sample.output_text}}"}],
        "labels": ["good", "bad", "meh"],
        "passing_labels": ["good"],
        **extra,
    }


def _openai_fields(kind: str) -> list[str]:
    from openai.types.graders import LabelModelGrader, ScoreModelGrader
    from openai.types.graders.score_model_grader import SamplingParams

    grader = ScoreModelGrader if kind == "score_model" else LabelModelGrader
    names = [name for name in grader.model_fields if name not in ("type", "sampling_params")]
    if kind == "score_model":
        names += [f"sampling_params.{name}" for name in SamplingParams.model_fields]
        names.append("pass_threshold")  # gradewire reads it beside the SDK's fields
    return names


OPENAI_VALUES: dict[str, Any] = {
    "input": [{"role": "user", "content": "Judge {{sample.output_text}} strictly"}],
    "model": "gpt-4o-2024-11-20",
    "range": [0, 5],
    "labels": ["good", "bad"],
    "passing_labels": ["good", "meh"],
    "pass_threshold": 6,
    "sampling_params.max_completions_tokens": 50,
    "sampling_params.reasoning_effort": "high",
    "sampling_params.seed": 8,
    "sampling_params.temperature": 0.9,
    "sampling_params.top_p": 0.5,
}
OPENAI_CASES = [(k, n) for k in ("score_model", "label_model") for n in _openai_fields(k)]


@pytest.mark.parametrize(("kind", "name"), OPENAI_CASES, ids=[f"{k}.{n}" for k, n in OPENAI_CASES])
def test_openai_model_graders_identity_follows_every_field(kind: str, name: str) -> None:
    make = score_config if kind == "score_model" else label_config
    base = openai_grader(make(), base_url=BASE_URL, api_key="k")
    same = openai_grader(make(), base_url=BASE_URL, api_key="k")
    assert base.identity == same.identity
    config = make()
    if name == "name":
        config["name"] = "renamed"
        assert openai_grader(config, base_url=BASE_URL, api_key="k").identity == base.identity
        return
    if name.startswith("sampling_params."):
        config["sampling_params"] = {
            **config["sampling_params"],
            name.split(".")[1]: OPENAI_VALUES[name],
        }
    else:
        config[name] = OPENAI_VALUES[name]
    assert openai_grader(config, base_url=BASE_URL, api_key="k").identity != base.identity


def test_the_identity_follows_a_judge_changed_after_it_was_read() -> None:
    judge = BinaryJudgeGrader("j", model(), "Answers")
    first = judge.identity
    assert judge.identity == first  # read again: the same
    judge.criteria = "Answers in full"
    second = judge.identity
    assert second != first
    judge.model.temperature = 0.7  # the model's own setting
    assert judge.identity != second
    panel = JudgePanel("p", [judge, BinaryJudgeGrader("b", model(), "Polite")])
    before = panel.identity
    judge.system_prompt = "You judge strictly."
    assert panel.identity != before  # a member changed: the panel did
