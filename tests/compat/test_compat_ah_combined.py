"""Adaptive Harmony's `CombinedGrader`: weights, aggregation, failures, reasoning and logs.

Runs against adaptive-harmony and gradewire alike (see `compat_targets`).
"""

from __future__ import annotations

import pytest
from ah_target import BaseGrader, CombinedGrader, Grade, IgnoreGradeException, StringThread, Table
from compat_targets import REAL


def sample(completion: str = "a") -> StringThread:
    return StringThread([("user", "q"), ("assistant", completion)])


class Fixed(BaseGrader):
    """Scores ``value`` with ``reasoning``; raises ``error`` instead when it is given."""

    def __init__(self, key: str, value: float = 1.0, reasoning: str | None = None, error=None):
        super().__init__(key)
        self.value, self.reasoning, self.error = value, reasoning, error

    async def grade(self, sample: StringThread) -> Grade:
        if self.error is not None:
            raise self.error
        self.add_log({"score": self.value})
        return Grade(value=self.value, grader_key=self.grader_key, reasoning=self.reasoning)


async def test_the_weighted_mean_is_the_default():
    combined = CombinedGrader(
        grader_key="combined",
        graders=[Fixed("g1", 1.0, "good"), Fixed("g2", 0.5, "so so"), Fixed("g3", 0.0, "bad")],
        weights=[1.0, 2.0, 1.0],
    )
    grade = await combined.grade(sample())
    assert (grade.value, grade.grader_key) == (0.5, "combined")
    assert grade.reasoning == "g1: 1.0 - good\ng2: 0.5 - so so\ng3: 0.0 - bad"


async def test_a_weighted_sum_with_adaptive_harmonys_keyword():
    combined = CombinedGrader(
        "total", [Fixed("a", 1.0, "x"), Fixed("b", 0.5, "y")], [2.0, 1.0], aggregation_method="sum"
    )
    assert (await combined.grade(sample())).value == 2.5
    positional = CombinedGrader(
        "total", [Fixed("a", 1.0, "x"), Fixed("b", 0.5, "y")], [2.0, 1.0], "sum"
    )
    assert (await positional.grade(sample())).value == 2.5


async def test_the_aggregation_method_is_kept_as_agg_method():
    assert CombinedGrader("c", [Fixed("a")]).agg_method == "mean"
    summed = CombinedGrader("c", [Fixed("a", 1.0, "x"), Fixed("b", 0.5, "y")], [2.0, 1.0], "sum")
    assert summed.agg_method == "sum"
    summed.agg_method = "mean"
    assert (await summed.grade(sample())).value == pytest.approx(2.5 / 3)  # AH: float32


async def test_a_sub_grade_without_reasoning_reads_none():
    combined = CombinedGrader("c", [Fixed("one", 1.0), Fixed("two", 0.0, "bad")])
    grade = await combined.grade(sample())
    assert grade.reasoning == "one: 1.0 - None\ntwo: 0.0 - bad"


async def test_equal_weights_without_weights():
    combined = CombinedGrader("c", [Fixed("a", 1.0, "x"), Fixed("b", 0.0, "y")])
    assert (await combined.grade(sample())).value == 0.5


async def test_an_abstaining_sub_grader_is_left_out_and_the_rest_renormalised():
    combined = CombinedGrader(
        "c",
        [
            Fixed("a", 1.0, "yes"),
            Fixed("na", error=IgnoreGradeException("n/a")),
            Fixed("b", 0.0, "no"),
        ],
        weights=[3.0, 5.0, 1.0],
        failure_rate_warning_threshold=0.5,
    )
    grade = await combined.grade(sample())
    assert grade.value == 0.75
    assert grade.reasoning.splitlines()[:2] == ["a: 1.0 - yes", "b: 0.0 - no"]


async def test_a_failing_sub_grader_fails_the_whole_sample_with_its_own_error():
    error = KeyError("metadata has no 'answer'")
    combined = CombinedGrader("c", [Fixed("a", 1.0, "fine"), Fixed("broken", error=error)])
    with pytest.raises(KeyError) as raised:
        await combined.grade(sample())
    assert raised.value is error


async def test_every_sub_grader_abstaining():
    combined = CombinedGrader("c", [Fixed("na", error=IgnoreGradeException("n/a"))])
    # Adaptive Harmony raises RuntimeError; gradewire abstains, counted in abstained_count.
    with pytest.raises(RuntimeError if REAL else IgnoreGradeException):
        await combined.grade(sample())


async def test_logs_are_the_combinations_and_each_sub_graders_under_its_key():
    parts = [Fixed("a", 1.0, "x"), Fixed("b", 0.0, "y")]
    combined = CombinedGrader("c", parts)
    for _ in range(2):
        await combined.grade(sample())
    logs = combined.get_logs(clear=True, log_all_samples=True)
    for key, value in {
        "score/mean": 0.5,
        "score/count": 2,
        "a/score/mean": 1.0,
        "a/score/count": 2,
        "b/score/mean": 0.0,
        "b/score/std": 0.0,
    }.items():
        assert logs[key] == value, key
    assert [key for key, value in logs.items() if isinstance(value, Table)] == []  # no tables
    assert combined.get_logs() == {}
    assert parts[0].get_logs() == {}  # clearing the combination clears its parts


async def test_clear_logs_clears_every_part():
    parts = [Fixed("a", 1.0, "x"), Fixed("b", 0.0, "y")]
    combined = CombinedGrader("c", parts)
    await combined.grade(sample())
    combined.clear_logs()
    assert combined.get_logs() == {}
    assert [part.get_logs() for part in parts] == [{}, {}]


async def test_sub_graders_stay_usable_on_their_own():
    part = Fixed("a", 0.25, "quarter")
    combined = CombinedGrader("c", [part])
    assert (await combined.grade(sample())).value == 0.25
    assert (await part.grade(sample())).value == 0.25
    assert combined.get_logs()["a/score/count"] == 2
