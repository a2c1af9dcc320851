"""The logging core on odd numbers: every number counted, nothing raised, merges finite.

Each property runs on 2,000 generated examples (``$GRADEWIRE_PROPERTY_EXAMPLES`` sets
another number: 10,000 or more before a release).
"""

from __future__ import annotations

import decimal
import fractions
import math
import numbers
import os
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gradewire import BaseGrader, Grade, LogState, StringThread
from gradewire.core import Stats

# Thousands of examples a property: out of `make test-fast`.
pytestmark = pytest.mark.slow

EXAMPLES = int(os.environ.get("GRADEWIRE_PROPERTY_EXAMPLES", "2000"))
MANY = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))


class Logged(BaseGrader):
    async def grade(self, sample: StringThread) -> Grade:
        raise NotImplementedError


class BadFloat(numbers.Real):
    """A number type whose conversion fails (registered as a Real, as some wrappers are)."""

    def __float__(self) -> float:
        raise ArithmeticError("cannot convert")

    # The rest of the Real interface, never called by the logging core.
    __abs__ = __add__ = __ceil__ = __eq__ = __floor__ = __floordiv__ = __le__ = __lt__ = __mod__ = (
        __mul__
    ) = __neg__ = __pos__ = __pow__ = __radd__ = __rfloordiv__ = __rmod__ = __rmul__ = __round__ = (
        __rpow__
    ) = __rtruediv__ = __truediv__ = __trunc__ = lambda *a: 0  # type: ignore[assignment]
    __hash__ = object.__hash__


NUMPY_KINDS = [
    np.bool_,
    np.int8,
    np.int16,
    np.int32,
    np.int64,
    np.uint8,
    np.uint16,
    np.uint32,
    np.uint64,
    np.float16,
    np.float32,
    np.float64,
    np.longdouble,
    np.complex64,
    np.complex128,
]


@st.composite
def numpy_scalars(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from(NUMPY_KINDS))
    if kind is np.bool_:
        return kind(draw(st.booleans()))
    if np.issubdtype(kind, np.integer):
        info = np.iinfo(kind)
        return kind(draw(st.integers(int(info.min), int(info.max))))
    real = draw(st.floats())
    with np.errstate(all="ignore"):  # a float32 or float16 overflows to inf, as intended
        if np.issubdtype(kind, np.complexfloating):
            return kind(complex(real, draw(st.sampled_from([0.0, 0.0, 1.5]))))
        return kind(real)


numbers_ = st.one_of(
    st.floats(),
    st.integers(),  # unbounded: beyond the float range too
    st.booleans(),
    numpy_scalars(),
    st.fractions(),
    st.decimals(allow_nan=True, allow_infinity=True),
    st.complex_numbers(),
    st.just(BadFloat()),
)
others = st.one_of(
    st.none(),
    st.text(max_size=4),
    st.sampled_from([np.str_("a"), b"bytes", [1.0], {"score": 1.0}, object()]),
)
records = st.lists(
    st.dictionaries(
        st.sampled_from(["score", "x", "error", "abstained", "y/z"]), numbers_ | others
    ),
    max_size=8,
)


def as_expected(value: object) -> float | None:
    """What the value is counted as: a float (maybe non-finite), or None when not a number."""
    if isinstance(value, (str, bytes)):
        return None
    if isinstance(value, (bool, np.bool_)):
        return float(value)
    if isinstance(value, BadFloat):
        return math.nan
    if isinstance(value, numbers.Integral):
        try:
            return float(value)
        except OverflowError:
            return math.inf
    if isinstance(value, complex | np.complexfloating):
        return float(value.real) if value.imag == 0 else math.nan
    if isinstance(value, decimal.Decimal):
        return math.nan if value.is_snan() else float(value)
    if isinstance(value, numbers.Number):
        with np.errstate(all="ignore"):
            return float(value)  # type: ignore[arg-type]
    return None


@MANY
@given(records)
def test_every_number_is_counted_and_add_log_never_raises(batch):
    grader = Logged("k")
    for record in batch:
        grader.add_log(record)
    assert grader._logs == batch
    assert all(kept is given for kept, given in zip(grader._logs, batch, strict=True))
    logs = grader.get_logs()
    if not batch:
        assert logs == {}
        return
    for key in ("score", "x", "error", "abstained", "y/z"):
        values = [as_expected(r[key]) for r in batch if key in r]
        counted = [v for v in values if v is not None]
        finite = [v for v in counted if math.isfinite(v)]
        if not counted:
            assert logs.get(f"{key}/count", 0) == 0
            continue
        assert logs[f"{key}/count"] == len(finite), key
        assert logs.get(f"{key}/nonfinite_count", 0) == len(counted) - len(finite), key
        if finite:
            assert logs[f"{key}/min"] == min(finite)
            assert logs[f"{key}/max"] == max(finite)
    errors = sum(isinstance(r.get("error"), str) for r in batch)
    abstained = sum(isinstance(r.get("abstained"), str) for r in batch)
    assert (logs["score/error_count"], logs["score/abstained_count"]) == (errors, abstained)


finite_floats = st.floats(allow_nan=False, allow_infinity=False)
value_lists = st.lists(finite_floats, min_size=1, max_size=6)


@MANY
@given(value_lists, value_lists)
def test_a_merge_is_finite_where_a_single_pass_is(left, right):
    single = Stats.of(left + right)
    merged = Stats.of(left).merge(Stats.of(right))
    assert (merged.count, merged.min, merged.max) == (single.count, single.min, single.max)
    if math.isfinite(single.mean):
        assert math.isfinite(merged.mean)
        assert single.min <= merged.mean <= single.max
    if single.m2 < 1e300:  # finite with room for rounding in the sum of the parts
        assert math.isfinite(merged.m2)


@MANY
@given(records, records)
def test_merged_grader_states_count_what_one_grader_counts(left, right):
    one, a, b = Logged("one"), Logged("a"), Logged("b")
    for record in left + right:
        one.add_log(record)
    for record in left:
        a.add_log(record)
    for record in right:
        b.add_log(record)
    merged = LogState.merge_all(
        [LogState.from_dict(a.log_state().to_dict()), LogState.from_dict(b.log_state().to_dict())]
    )
    single = one.log_state()
    assert merged.counts == single.counts
    assert set(merged.stats) == set(single.stats)
    for key, stats in single.stats.items():
        other = merged.stats[key]
        assert (other.count, other.nonfinite, other.min, other.max) == (
            stats.count,
            stats.nonfinite,
            stats.min,
            stats.max,
        )
        if math.isfinite(stats.mean):
            assert math.isfinite(other.mean)


def test_the_reported_cases():
    grader = Logged("k")
    grader.add_log({"big": 10**400, "later": 1.0, "ok": np.bool_(True)})
    grader.add_log({"big": -(10**400), "later": 3.0, "ok": np.array([1, 2])[0] == 2})
    logs = grader.get_logs()
    assert (logs["big/count"], logs["big/nonfinite_count"]) == (0, 2)
    assert (logs["later/count"], logs["later/mean"]) == (2, 2.0)
    assert (logs["ok/count"], logs["ok/mean"]) == (2, 0.5)
    merged = Stats.of([1.5e308]).merge(Stats.of([-1.5e308]))
    assert merged.mean == Stats.of([1.5e308, -1.5e308]).mean == 0.0


@pytest.mark.parametrize(
    ("value", "counted"),
    [
        (fractions.Fraction(1, 3), 1 / 3),
        (decimal.Decimal("2.5"), 2.5),
        (np.float16(0.5), 0.5),
        (np.uint64(2**64 - 1), float(2**64 - 1)),
        (np.complex64(2.0), 2.0),
        (3 + 0j, 3.0),
    ],
)
def test_numbers_of_other_types_are_counted_as_floats(value, counted):
    grader = Logged("k")
    grader.add_log({"v": value})
    assert grader.get_logs()["v/mean"] == pytest.approx(counted)
