import asyncio

import pytest
from pydantic import BaseModel

from gradewire import (
    BaseGrader,
    CombinedGrader,
    Grade,
    GradingError,
    IgnoreGradeException,
    InvalidInputError,
    InvalidTypeError,
    OutputParserException,
    StringThread,
    pydantic_parse,
)


def sample(**metadata: object) -> StringThread:
    return StringThread([("user", "q"), ("assistant", "a")], metadata=metadata)


def constant(key: str, value: float | None) -> BaseGrader:
    return BaseGrader.from_function(key, lambda s: value)


async def test_weighted_mean_keeps_children_and_reasoning():
    combined = CombinedGrader(
        "combined", [constant("a", 1.0), constant("b", 0.0), constant("c", 0.5)], [1.0, 2.0, 1.0]
    )
    grade = await combined.grade(sample())
    assert grade.value == pytest.approx((1.0 + 0.0 + 0.5) / 4)
    assert grade.grader_key == "combined"
    assert [(c.grader_key, c.value, c.weight) for c in grade.children] == [
        ("a", 1.0, 1.0),
        ("b", 0.0, 2.0),
        ("c", 0.5, 1.0),
    ]
    # One line per sub-grade, ``key: value - reasoning`` as Adaptive Harmony writes it.
    assert grade.reasoning == "a: 1.0 - None\nb: 0.0 - None\nc: 0.5 - None"
    reasoned = CombinedGrader(
        "r",
        [
            BaseGrader.from_function("x", lambda s: Grade(1.0, "x", "all tests pass")),
            BaseGrader.from_function("y", lambda s: Grade(0.25, "y", "one of four")),
        ],
    )
    assert (await reasoned.grade(sample())).reasoning == (
        "x: 1.0 - all tests pass\ny: 0.25 - one of four"
    )


async def test_default_weights_and_sum_aggregation():
    graders = [constant("a", 1.0), constant("b", 0.5)]
    assert (await CombinedGrader("m", graders).grade(sample())).value == 0.75
    summed = CombinedGrader("s", [constant("x", 1.0), constant("y", 0.5)], [2.0, 2.0], "sum")
    assert (await summed.grade(sample())).value == 3.0


async def test_a_failing_sub_grader_raises_its_own_error_by_default():
    error = RuntimeError("judge down")

    def explode(s: StringThread) -> float:
        raise error

    combined = CombinedGrader(
        "combined",
        [constant("ok", 1.0), constant("abstains", None), BaseGrader.from_function("err", explode)],
    )
    with pytest.raises(RuntimeError) as raised:
        await combined.grade(sample())
    assert raised.value is error
    assert await combined(sample()) is None  # grade_many and callers count the sample
    logs = combined.get_logs()
    assert logs["score/error_count"] == 1
    assert logs["err/score/error_count"] == 2
    assert logs["abstains/score/abstained_count"] == 2
    assert "score/mean" not in logs


async def test_abstaining_and_failing_sub_graders_are_skipped_and_counted():
    class Parses(BaseGrader):
        class Answer(BaseModel):
            answer: int

        async def grade(self, s: StringThread) -> Grade:
            parsed = pydantic_parse(s.last_content(), self.Answer)
            self.add_log({"score": float(parsed.answer)})
            return Grade(float(parsed.answer), self.grader_key)

    def explode(s: StringThread) -> float:
        raise RuntimeError("judge down")

    combined = CombinedGrader(
        "combined",
        [
            constant("ok", 1.0),
            constant("abstains", None),
            BaseGrader.from_function("err", explode),
            Parses("parse"),
        ],
        weights=[1.0, 5.0, 5.0, 5.0],
        on_error="skip",
    )
    grade = await combined.grade(sample())
    assert grade.value == 1.0  # renormalised over the one grader that succeeded
    assert [c.grader_key for c in grade.children] == ["ok"]
    lines = (grade.reasoning or "").splitlines()
    assert lines[:3] == [
        "ok: 1.0 - None",
        "abstains: abstained - grading function constant.<locals>.<lambda>() returned None",
        "err: failed - RuntimeError: judge down",
    ]
    assert lines[3].startswith("parse: failed - OutputParserException")
    logs = combined.get_logs()
    assert logs["skipped/mean"] == 3.0
    assert logs["abstains/score/abstained_count"] == 1
    assert logs["err/score/error_count"] == 1
    assert logs["parse/score/error_count"] == 1
    assert logs["ok/score/mean"] == 1.0
    assert logs["score/mean"] == 1.0


async def test_all_abstaining_abstains_and_all_failing_is_an_error():
    abstaining = CombinedGrader("c", [constant("a", None), constant("b", None)])
    with pytest.raises(IgnoreGradeException, match="every sub-grader abstained"):
        await abstaining.grade(sample())

    def explode(s: StringThread) -> float:
        raise OutputParserException("no JSON", "garbage")

    failing = CombinedGrader(
        "c", [constant("a", None), BaseGrader.from_function("b", explode)], on_error="skip"
    )
    with pytest.raises(GradingError, match=r"no sub-grader produced a grade.*b: failed"):
        await failing.grade(sample())
    assert await failing(sample()) is None
    assert failing.get_logs()["score/error_count"] == 1


async def test_only_zero_weight_successes_is_an_error():
    combined = CombinedGrader("c", [constant("a", 1.0), constant("b", None)], [0.0, 1.0])
    with pytest.raises(GradingError, match="zero-weight"):
        await combined.grade(sample())


async def test_sub_graders_run_concurrently():
    started = asyncio.Event()

    async def waits(s: StringThread) -> float:
        await asyncio.wait_for(started.wait(), timeout=5)
        return 1.0

    async def releases(s: StringThread) -> float:
        started.set()
        return 0.0

    combined = CombinedGrader(
        "c", [BaseGrader.from_function("w", waits), BaseGrader.from_function("r", releases)]
    )
    assert (await combined.grade(sample())).value == 0.5


async def test_logs_nest_sub_graders_and_clear_reaches_them():
    a, b = constant("a", 1.0), constant("b", 0.0)
    combined = CombinedGrader("c", [a, b])
    await combined.grade_many([sample(), sample()])
    logs = combined.get_logs()
    assert logs["score/mean"] == 0.5
    assert logs["a/score/mean"] == 1.0
    assert logs["b/score/count"] == 2
    state_logs = combined.log_state().to_logs()
    assert state_logs == logs
    assert combined.get_logs(clear=True)
    assert combined.get_logs() == {}
    assert a.get_logs() == {}
    assert b.get_logs() == {}


async def test_sample_tables_show_the_reasoning():
    combined = CombinedGrader("c", [constant("a", 1.0)], sample_tables=True)
    await combined.grade(sample())
    table = combined.get_logs()["score/scored_samples"]
    assert table.rows == [["q", "a", "a: 1.0 - None", 1.0]]  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("graders", "weights", "aggregation", "error", "match"),
    [
        ([], None, "mean", InvalidInputError, "at least one grader"),
        (["a"], None, "mean", InvalidTypeError, "from_function"),
        ([constant("a", 1), constant("a", 0)], None, "mean", InvalidInputError, "share the key"),
        ([constant("a", 1)], [1.0, 2.0], "mean", InvalidInputError, "one weight per grader"),
        ([constant("a", 1)], [-1.0], "mean", InvalidInputError, "combine()"),
        ([constant("a", 1)], [0.0], "mean", InvalidInputError, "positive"),
        ([constant("a", 1)], [float("nan")], "mean", InvalidInputError, "finite"),
        ([constant("a", 1)], None, "max", InvalidInputError, "'mean' or 'sum'"),
    ],
)
def test_bad_configuration_is_refused(graders, weights, aggregation, error, match):
    with pytest.raises(error, match=match):
        CombinedGrader("c", graders, weights, aggregation)


def test_repr():
    combined = CombinedGrader("c", [constant("a", 1.0)], [2.0])
    assert repr(combined) == (
        "CombinedGrader(grader_key='c', graders=['a'], weights=[2.0], aggregation='mean', "
        "on_error='raise')"
    )


async def test_on_error_decides_what_a_failing_sub_grader_means():
    def explode(s: StringThread) -> float:
        raise RuntimeError("context too long for the judge")

    def graders() -> list[BaseGrader]:
        return [
            BaseGrader.from_function("judge", explode),
            constant("format", 1.0),
            constant("label", None),
        ]

    weights = [0.8, 0.2, 1.0]
    default = CombinedGrader("c", graders(), weights)
    with pytest.raises(RuntimeError, match="context too long"):
        await default.grade(sample())
    skip = CombinedGrader("c", graders(), weights, on_error="skip")
    assert (await skip.grade(sample())).value == 1.0  # the trap: format alone decides
    zero = CombinedGrader("c", graders(), weights, on_error="zero")
    grade = await zero.grade(sample())
    assert grade.value == pytest.approx(0.2)  # 0.8 * 0 + 0.2 * 1, the abstention skipped
    assert grade.children[0].info["error"].startswith("judge failed (RuntimeError")
    fail = CombinedGrader("c", graders(), weights, on_error="fail")
    with pytest.raises(GradingError, match=r"on_error='fail'.*context too long"):
        await fail.grade(sample())
    assert await fail(sample()) is None
    assert fail.get_logs()["score/error_count"] == 1
    with pytest.raises(InvalidInputError, match="'raise', 'skip', 'zero' or 'fail'"):
        CombinedGrader("c", graders(), weights, on_error="ignore")  # type: ignore[arg-type]


async def test_adaptive_harmonys_keywords_and_their_checks():
    graders = [constant("a", 1.0), constant("b", 0.5)]
    summed = CombinedGrader("s", graders, [2.0, 2.0], aggregation_method="sum")
    assert summed.aggregation == "sum"
    assert (await summed.grade(sample())).value == 3.0
    same = CombinedGrader("s2", [constant("x", 1.0)], aggregation="sum", aggregation_method="sum")
    assert same.aggregation == "sum"
    with pytest.raises(InvalidInputError, match="disagree"):
        CombinedGrader("c", [constant("y", 1.0)], aggregation="mean", aggregation_method="sum")
    with pytest.raises(InvalidInputError, match="between 0 and 1"):
        CombinedGrader("c", [constant("z", 1.0)], failure_rate_warning_threshold=1.5)


async def test_skipped_failures_above_the_threshold_warn_once(caplog):
    def explode(s: StringThread) -> float:
        raise RuntimeError("judge down")

    combined = CombinedGrader(
        "c",
        [constant("ok", 1.0), BaseGrader.from_function("bad", explode), constant("na", None)],
        on_error="skip",
        failure_rate_warning_threshold=0.3,
    )
    for _ in range(3):
        await combined.grade(sample())
    warned = [
        r.getMessage() for r in caplog.records if "failure_rate_warning_threshold" in r.getMessage()
    ]
    assert len(warned) == 1
    assert "1 of 3 sub-graders failed" in warned[0]
    combined.clear_logs()
    await combined.grade(sample())
    warned = [r for r in caplog.records if "failure_rate_warning_threshold" in r.getMessage()]
    assert len(warned) == 2  # once again after the logs were cleared
    quiet = CombinedGrader("q", [constant("ok", 1.0), constant("na", None)])
    caplog.clear()
    await quiet.grade(sample())  # an abstention is counted, not warned of
    assert not [r for r in caplog.records if "failure_rate" in r.getMessage()]


def ranged(key: str, low: float, high: float) -> BaseGrader:
    grader = constant(key, low)
    grader.score_range = (low, high)
    return grader


@pytest.mark.parametrize(
    ("aggregation", "on_error", "expected"),
    [
        ("mean", "raise", (-1.0, 5.0)),  # the lowest low to the highest high
        ("sum", "raise", (-2.0, 1.0 + 2.0 * 5.0)),  # negative lows, positive highs, weighted
        ("mean", "zero", (-1.0, 5.0)),
    ],
)
def test_a_combined_range_is_found_from_its_parts(aggregation, on_error, expected):
    combined = CombinedGrader(
        "c",
        [ranged("a", 0.0, 1.0), ranged("b", -1.0, 5.0), constant("unweighted", 7.0)],
        weights=[1.0, 2.0, 0.0],
        aggregation=aggregation,
        on_error=on_error,
    )
    assert combined.score_range == expected


async def test_every_combined_score_lies_in_its_found_range():
    parts = [ranged("a", 0.2, 0.9), ranged("b", 0.5, 3.0)]
    for aggregation in ("mean", "sum"):
        combined = CombinedGrader("c", parts, weights=[0.3, 1.7], aggregation=aggregation)
        low, high = combined.score_range
        grade = await combined.grade(sample())
        assert low <= grade.value <= high


def test_a_combined_range_is_unknown_when_a_weighted_part_s_is():
    combined = CombinedGrader("c", [ranged("a", 0.0, 1.0), constant("b", 0.5)])
    assert combined.score_range is None
    combined.score_range = (0.0, 1.0)  # the author's word wins
    assert combined.score_range == (0.0, 1.0)
    zero = CombinedGrader("z", [ranged("a", 0.5, 1.0)], on_error="zero")
    assert zero.score_range == (0.0, 1.0)  # a failed part counts 0
