"""The range judge's pass rule as data: ``pass_threshold`` in its spec, declared once.

The constructor declares the parameter and its default; the spec takes its default from it
(`default_of`), so a calibrated threshold written by ``gradewire judge align --spec-out``
builds the same judge again: build → spec → build gives the same identity.
"""

from __future__ import annotations

import functools
import json
import math

import pytest

from gradewire.core import InvalidInputError, StringThread
from gradewire.judges import RangeJudgeGrader
from gradewire.models import OpenAIChatModel
from gradewire.specs import _factory
from gradewire.specs._factory import grader_config
from support.judge_server import JudgeServer, Reply, chat_body

build_grader = functools.partial(_factory.build_grader, trust_code=True)

SAMPLE = StringThread([("user", "Say yes"), ("assistant", "yes indeed")])


def spec(server: JudgeServer, **fields: object) -> dict[str, object]:
    return {
        "type": "range_judge",
        "key": "helpful",
        "criteria": "Helpful",
        "judge_model": {"model": "judge", "base_url": server.base_url},
        "use_logprobs": False,
        **fields,
    }


def test_build_spec_build_keeps_the_identity_with_and_without_a_threshold(
    judge_server: JudgeServer,
) -> None:
    for threshold in (None, 0.0, 0.625, 1.0):
        first = build_grader(spec(judge_server, pass_threshold=threshold))
        assert isinstance(first, RangeJudgeGrader)
        assert first.pass_threshold == threshold
        written = grader_config(first)["graders"][0]
        assert written.get("pass_threshold") == threshold  # None: left out, the default
        # Through JSON, as --spec-out writes it.
        again = build_grader(json.loads(json.dumps(written)))
        assert again.identity == first.identity  # type: ignore[attr-defined]
    with_rule = build_grader(spec(judge_server, pass_threshold=0.625))
    without = build_grader(spec(judge_server))
    other = build_grader(spec(judge_server, pass_threshold=0.75))
    identities = {g.identity for g in (with_rule, without, other)}  # type: ignore[attr-defined]
    assert len(identities) == 3  # the pass rule decides verdicts: part of the identity


def test_the_spec_builds_what_the_constructor_builds(judge_server: JudgeServer) -> None:
    built = build_grader(spec(judge_server, pass_threshold=0.5))
    model = OpenAIChatModel("judge", base_url=judge_server.base_url)
    direct = RangeJudgeGrader("helpful", model, "Helpful", use_logprobs=False, pass_threshold=0.5)
    assert built.identity == direct.identity  # type: ignore[attr-defined]
    assert "pass_threshold" not in spec(judge_server)  # omitted: the constructor's default
    assert build_grader(spec(judge_server)).pass_threshold is None  # type: ignore[attr-defined]


async def test_the_threshold_decides_passed_and_the_pass_rate(judge_server: JudgeServer) -> None:
    judge_server.handler = lambda request: Reply(
        json=chat_body(json.dumps({"reasoning": "fine", "score": 4}))
    )
    model = OpenAIChatModel("judge", base_url=judge_server.base_url)
    lenient = RangeJudgeGrader("a", model, "Helpful", use_logprobs=False, pass_threshold=0.75)
    strict = RangeJudgeGrader("b", model, "Helpful", use_logprobs=False, pass_threshold=0.8)
    plain = RangeJudgeGrader("c", model, "Helpful", use_logprobs=False)
    graded = [await g.grade(SAMPLE) for g in (lenient, strict, plain)]
    assert [g.value for g in graded] == [0.75, 0.75, 0.75]  # (4 - 1) / (5 - 1)
    assert graded[0].info["passed"] is True  # at the threshold: passes
    assert graded[1].info["passed"] is False
    assert "passed" not in graded[2].info
    assert lenient.get_logs()["passed/mean"] == 1.0
    assert strict.get_logs()["passed/mean"] == 0.0
    assert not any(key.startswith("passed/") for key in plain.get_logs())


@pytest.mark.parametrize("bad", [4, -0.1, 1.5, math.nan, math.inf])
def test_a_threshold_off_the_value_scale_is_refused(judge_server: JudgeServer, bad: float) -> None:
    model = OpenAIChatModel("judge", base_url=judge_server.base_url)
    with pytest.raises(InvalidInputError, match="from 0 to 1"):
        RangeJudgeGrader("r", model, "Helpful", pass_threshold=bad)
    with pytest.raises(InvalidInputError, match="pass_threshold"):
        build_grader(spec(judge_server, pass_threshold=bad))
