"""Weighted combinations on extreme weights, against exact rational arithmetic.

Weights of 1e308 once overflowed their total to inf and every combined value became 0.0.
Each combinator is checked here against a `fractions.Fraction` reference: the result is
the exact one rounded (within a few units in the last place), or refused when the exact
one is beyond the float range, never a plausible wrong number.
"""

from __future__ import annotations

import asyncio
import math
import sys
import warnings
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gradewire import (
    BaseGrader,
    CombinedGrader,
    Grade,
    GradingError,
    InvalidInputError,
    StringThread,
    hud,
)
from gradewire.core._weights import weighted_mean, weighted_sum

SAMPLE = StringThread([("user", "q"), ("assistant", "a")])
EPS = Fraction(sys.float_info.epsilon)
MAX = Fraction(sys.float_info.max)

weights_st = st.floats(min_value=0.0, max_value=sys.float_info.max, allow_subnormal=True)
extreme_st = st.sampled_from([1e308, sys.float_info.max, 5e-324, 1e-300, 1.0, 0.0])
weight_st = st.one_of(weights_st, extreme_st)
unit_st = st.floats(min_value=0.0, max_value=1.0)
value_st = st.one_of(
    unit_st, st.floats(min_value=-sys.float_info.max, max_value=sys.float_info.max)
)


def exact_mean(values: list[float], weights: list[float]) -> Fraction:
    total = sum(Fraction(w) for w in weights)
    return sum(Fraction(v) * Fraction(w) for v, w in zip(values, weights, strict=True)) / total


def exact_sum(values: list[float], weights: list[float]) -> Fraction:
    return sum(Fraction(v) * Fraction(w) for v, w in zip(values, weights, strict=True))


def assert_close(got: float, exact: Fraction, scale: Fraction, n: int) -> None:
    """``got`` is ``exact`` up to the rounding of n products and a division."""
    assert math.isfinite(got)
    tolerance = (n + 4) * EPS * scale + Fraction(5e-324)
    assert abs(Fraction(got) - exact) <= tolerance, (got, float(exact))


def check_mean(got: float, values: list[float], weights: list[float]) -> None:
    exact = exact_mean(values, weights)
    assert_close(got, exact, max(abs(Fraction(v)) for v in values), len(values))


def check_sum(outcome: float | Exception, values: list[float], weights: list[float]) -> None:
    exact = exact_sum(values, weights)
    spread = sum(abs(Fraction(v) * Fraction(w)) for v, w in zip(values, weights, strict=True))
    tolerance = (len(values) + 4) * EPS * spread
    if isinstance(outcome, Exception):
        # Refused only when the exact sum is (about) beyond the float range.
        assert abs(exact) > MAX - tolerance, float(exact)
    else:
        assert_close(outcome, exact, spread, len(values))


pairs_st = st.integers(min_value=1, max_value=5).flatmap(
    lambda n: st.tuples(
        st.lists(value_st, min_size=n, max_size=n),
        st.lists(weight_st, min_size=n, max_size=n).filter(lambda ws: any(w > 0 for w in ws)),
    )
)


@given(pairs_st)
@settings(max_examples=300)
def test_weighted_mean_is_the_exact_mean_rounded(pair: tuple[list[float], list[float]]) -> None:
    values, weights = pair
    check_mean(weighted_mean(values, weights), values, weights)


@given(pairs_st)
@settings(max_examples=300)
def test_weighted_sum_is_the_exact_sum_rounded_or_inf(
    pair: tuple[list[float], list[float]],
) -> None:
    values, weights = pair
    got = weighted_sum(values, weights)
    check_sum(got if math.isfinite(got) else OverflowError(), values, weights)


def combined(values: list[float], weights: list[float], aggregation: str) -> CombinedGrader:
    graders = [
        BaseGrader.from_function(f"g{i}", lambda sample, v=value: v)
        for i, value in enumerate(values)
    ]
    return CombinedGrader("combo", graders, weights, aggregation=aggregation)  # type: ignore[arg-type]


@given(pairs_st)
@settings(max_examples=150, deadline=None)
def test_combined_grader_mean_on_extreme_weights(pair: tuple[list[float], list[float]]) -> None:
    values, weights = pair
    grade = asyncio.run(combined(values, weights, "mean").grade(SAMPLE))
    check_mean(grade.value, values, weights)


@given(pairs_st)
@settings(max_examples=150, deadline=None)
def test_combined_grader_sum_on_extreme_weights(pair: tuple[list[float], list[float]]) -> None:
    values, weights = pair
    grader = combined(values, weights, "sum")
    outcome: float | Exception
    try:
        outcome = asyncio.run(grader.grade(SAMPLE)).value
    except GradingError as exc:
        outcome = exc
    if isinstance(outcome, Exception):
        assert "beyond the float range" in str(outcome)
    check_sum(outcome, values, weights)


hud_pairs_st = st.integers(min_value=1, max_value=5).flatmap(
    lambda n: st.tuples(
        st.lists(unit_st, min_size=n, max_size=n),
        st.lists(st.one_of(weight_st, weight_st.map(lambda w: -w)), min_size=n, max_size=n).filter(
            lambda ws: any(w > 0 for w in ws)
        ),
    )
)


def exact_penalised(values: list[float], weights: list[float]) -> tuple[Fraction, Fraction]:
    """HUD's reward: positive weights normalised to 1, negative ones kept as penalties."""
    positive = sum(Fraction(w) for w in weights if w > 0)
    terms = [
        Fraction(v) * (Fraction(w) / positive if w > 0 else Fraction(w))
        for v, w in zip(values, weights, strict=True)
    ]
    return sum(terms), sum(abs(t) for t in terms)


@given(hud_pairs_st)
@settings(max_examples=150, deadline=None)
def test_hud_combine_of_grades_and_subscores_on_extreme_weights(
    pair: tuple[list[float], list[float]],
) -> None:
    values, weights = pair
    exact, spread = exact_penalised(values, weights)
    grades = [
        Grade(value=v, grader_key=f"s{i}", weight=w)
        for i, (v, w) in enumerate(zip(values, weights, strict=True))
    ]
    hud_items = [
        hud.SubScore(name=f"s{i}", value=v, weight=w)
        for i, (v, w) in enumerate(zip(values, weights, strict=True))
    ]
    for run in (lambda: hud.combine(*grades), lambda: hud.combine(*hud_items)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # HUD's "weights do not sum to 1"
            try:
                reward: float | Exception = asyncio.run(run()).reward
            except InvalidInputError as exc:
                reward = exc
        tolerance = (len(values) + 4) * EPS * spread
        if isinstance(reward, Exception):
            assert abs(exact) > MAX - tolerance
        else:
            assert_close(reward, exact, spread, len(values))


async def test_weights_of_1e308_give_the_mean_not_zero() -> None:
    """The reported case: two graders, values 1 and 0, both weighted 1e308."""
    grader = combined([1.0, 0.0], [1e308, 1e308], "mean")
    assert (await grader.grade(SAMPLE)).value == 0.5
    with pytest.warns(UserWarning, match="sum to inf"):
        hud_result = await hud.combine(
            hud.SubScore(name="a", value=1.0, weight=1e308),
            hud.SubScore(name="b", value=0.0, weight=1e308),
        )
    assert hud_result.reward == 0.5


async def test_a_sum_beyond_the_float_range_is_an_error_not_a_number() -> None:
    grader = combined([1.0, 1.0], [1e308, 1e308], "sum")
    assert await grader.grade_many([SAMPLE]) == [None]
    assert grader.get_logs()["score/error_count"] == 1


async def test_ordinary_weights_give_the_plain_formula_bit_for_bit() -> None:
    values, weights = [1.0, 0.25, 0.7], [0.9, 0.1, 0.3]
    plain = math.fsum(v * w for v, w in zip(values, weights, strict=True))
    grade = await combined(values, weights, "mean").grade(SAMPLE)
    assert grade.value == plain / math.fsum(weights)
    total = await combined(values, weights, "sum").grade(SAMPLE)
    assert total.value == plain


async def test_hud_combine_refuses_an_infinite_weight() -> None:
    with pytest.raises(ValueError, match="finite"):
        await hud.combine(hud.SubScore(name="a", value=1.0, weight=math.inf))


def test_a_sum_of_products_below_the_normal_floats_is_still_the_exact_one_rounded() -> None:
    # Each 0.5 * 5e-324 rounds to 0.0 on its own; the exact sum 7.5e-324 rounds to 1e-323.
    values, weights = [0.5, 0.5, 0.5], [5e-324, 5e-324, 5e-324]
    assert weighted_sum(values, weights) == 1e-323
    check_sum(weighted_sum(values, weights), values, weights)
