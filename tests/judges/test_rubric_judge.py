"""RubricJudgeGrader over real HTTP: weighted criteria, penalties, children, parallel calls."""

from __future__ import annotations

import asyncio

import pytest

from gradewire import Grade, InvalidInputError, InvalidTypeError, StringThread
from gradewire.judges._rubric_judge import RubricCriterion, RubricJudgeGrader, parse_criteria
from support.judge_scripts import last_user, sections, verdict
from support.judge_server import error

THREAD = StringThread(
    [("user", "Why is the sky blue?"), ("assistant", "Rayleigh scattering [Smith 2031].")]
)


def rubric_judge(met: dict[str, bool]):
    """Answers MET/UNMET per requirement (or mistake) text, as the test decides."""

    def handler(request):
        prompt = last_user(request)
        [criterion] = sections(prompt, "requirement") or sections(prompt, "mistake")
        for text, is_met in met.items():
            if criterion.endswith(text):
                return verdict("MET" if is_met else "UNMET", f"checked: {text}")
        return error(400, f"unexpected criterion {criterion!r}")

    return handler


async def test_weights_penalty_value_and_children(judge_server, make_judge):
    criteria = ["Correct", ("Cites a source", 2.0), ("Invents a citation", -1.0)]
    met = {"Correct": True, "Cites a source": True, "Invents a citation": True}
    judge_server.handler = rubric_judge(met)
    grader = RubricJudgeGrader("rubric", make_judge(), criteria)
    grade = await grader.grade(THREAD)

    # (1*1 + 1*2 - 1*|-1|) / (1 + 2): the made mistake takes off its weight.
    assert grade.value == pytest.approx((1 + 2 - 1) / 3)
    assert [c.name for c in grade.children] == [
        "Correct",
        "Cites a source",
        "Invents a citation",
    ]
    assert [c.value for c in grade.children] == [1.0, 1.0, 1.0]
    assert [c.weight for c in grade.children] == [1.0, 2.0, -1.0]
    assert all(type(c) is Grade for c in grade.children)
    assert grade.children[2].info["reason"] == "checked: Invents a citation"
    assert grade.children[2].info["verdict"] == "MET"
    assert "[MET (penalty)] Invents a citation" in (grade.reasoning or "")
    assert grade.info["usage"]["judge_calls"] == 3

    prompts = {
        (sections(last_user(r), "requirement") or sections(last_user(r), "mistake"))[0]
        for r in judge_server.chat_requests
    }
    assert prompts == {
        "Correct",
        "Cites a source",
        "The answer makes this mistake: Invents a citation",
    }
    logs = grader.get_logs()
    assert logs["score/mean"] == pytest.approx(2 / 3)
    assert logs["judge_calls/mean"] == 3.0


async def test_unmet_criteria_and_an_avoided_mistake(judge_server, make_judge):
    met = {"Correct": True, "Cites a source": False, "Invents a citation": False}
    judge_server.handler = rubric_judge(met)
    criteria = ["Correct", ("Cites a source", 2.0), ("Invents a citation", -1.0)]
    grade = await RubricJudgeGrader("rubric", make_judge(), criteria).grade(THREAD)
    assert grade.value == pytest.approx(1 / 3)  # only "Correct" (1 of 3 positive weight)
    assert [c.value for c in grade.children] == [1.0, 0.0, 0.0]


async def test_penalties_never_push_the_score_below_zero(judge_server, make_judge):
    met = {"Correct": False, "Rude": True}
    judge_server.handler = rubric_judge(met)
    grade = await RubricJudgeGrader("rubric", make_judge(), ["Correct", ("Rude", -5)]).grade(THREAD)
    assert grade.value == 0.0
    assert grade.children[1].weight == -5.0


class Rendezvous:
    """A handler that answers only once ``expected`` requests are in flight together."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.arrived = 0
        self.everyone: asyncio.Event | None = None

    async def __call__(self, request):
        if self.everyone is None:
            self.everyone = asyncio.Event()
        self.arrived += 1
        if self.arrived >= self.expected:
            self.everyone.set()
        try:
            await asyncio.wait_for(self.everyone.wait(), timeout=10)
        except asyncio.TimeoutError:
            return error(400, "the criteria were not judged concurrently")
        return verdict("MET")


async def test_criteria_are_judged_concurrently(judge_server, make_judge):
    judge_server.handler = Rendezvous(4)
    grader = RubricJudgeGrader("rubric", make_judge(), ["A", "B", "C", "D"])
    grade = await grader.grade(THREAD)
    assert grade.value == 1.0
    assert judge_server.max_in_flight == 4


async def test_one_failing_criterion_fails_the_sample(judge_server, make_judge):
    judge_server.handler = rubric_judge({"Correct": True})  # "Concise" gets a 400
    grader = RubricJudgeGrader("rubric", make_judge(), ["Correct", "Concise"])
    assert await grader(THREAD) is None
    logs = grader.get_logs()
    assert logs["score/error_count"] == 1
    assert logs["score/count"] == 0


def test_criteria_parsing():
    assert parse_criteria("Correct") == (RubricCriterion("Correct", 1.0),)
    assert parse_criteria(
        ["A", ("B", 2), ["C", -0.5], {"requirement": "D"}, {"requirement": "E", "weight": 3}]
    ) == (
        RubricCriterion("A", 1.0),
        RubricCriterion("B", 2.0),
        RubricCriterion("C", -0.5),
        RubricCriterion("D", 1.0),
        RubricCriterion("E", 3.0),
    )


@pytest.mark.parametrize(
    ("criteria", "error_type", "message"),
    [
        ([], InvalidInputError, "empty"),
        ([("Rude", -1.0)], InvalidInputError, "at least one positive"),
        ([("A", 0)], InvalidInputError, "non-zero"),
        ([("A", float("nan"))], InvalidInputError, "finite"),
        ([("A", float("inf"))], InvalidInputError, "finite"),
        ([("A", True)], InvalidTypeError, "weight"),
        ([("A", "2")], InvalidTypeError, "weight"),
        (["  "], InvalidInputError, "non-empty requirement"),
        ([("A", 1.0, 2.0)], InvalidTypeError, "pair"),
        ([{"text": "A"}], InvalidInputError, "'requirement'"),
        ({"A": 1.0}, InvalidTypeError, "list"),
    ],
)
def test_bad_criteria_are_refused(make_judge, criteria, error_type, message):
    with pytest.raises(error_type, match=message):
        RubricJudgeGrader("rubric", make_judge(), criteria)
