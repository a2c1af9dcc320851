import itertools
import json
import math
import statistics

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gradewire import InvalidInputError, LogState
from gradewire.core import Stats


def test_stats_of_values():
    stats = Stats.of([1.0, 2.0, 4.0])
    assert stats.count == 3
    assert stats.mean == pytest.approx(7 / 3)
    assert stats.std == pytest.approx(statistics.stdev([1.0, 2.0, 4.0]))
    assert (stats.min, stats.max, stats.nonfinite) == (1.0, 4.0, 0)


def test_single_value_has_zero_std_and_empty_has_no_stats():
    assert Stats.of([5.0]).std == 0.0
    empty = Stats.of([])
    assert empty.count == 0
    assert empty.to_logs("x") == {"x/count": 0}


def test_non_finite_values_are_counted_apart():
    stats = Stats.of([1.0, math.nan, 3.0, math.inf, -math.inf])
    assert (stats.count, stats.mean, stats.nonfinite) == (2, 2.0, 3)
    assert stats.to_logs("k") == {
        "k/mean": 2.0,
        "k/std": pytest.approx(math.sqrt(2)),
        "k/min": 1.0,
        "k/max": 3.0,
        "k/count": 2,
        "k/nonfinite_count": 3,
    }
    only_nan = Stats.of([math.nan])
    assert only_nan.to_logs("k") == {"k/count": 0, "k/nonfinite_count": 1}


def test_huge_values_do_not_overflow_the_mean():
    stats = Stats.of([1e308, 1e308, 1e308])
    assert stats.mean == pytest.approx(1e308)
    assert math.isfinite(stats.mean)


def test_merge_of_one_million_values_equals_single_pass():
    rng = np.random.default_rng(7)
    values = np.concatenate([rng.normal(3.0, 2.0, 600_000), rng.exponential(5.0, 400_000)])
    rng.shuffle(values)
    cuts = [0, 1, 17, 250_000, 250_001, 731_113, 1_000_000]
    parts = [Stats.of(values[a:b]) for a, b in itertools.pairwise(cuts)]
    merged = parts[0]
    for part in parts[1:]:
        merged = merged.merge(part)
    assert merged.count == 1_000_000
    assert merged.mean == pytest.approx(float(values.mean()), rel=1e-12)
    assert merged.std == pytest.approx(float(values.std(ddof=1)), rel=1e-10)
    assert merged.min == float(values.min())
    assert merged.max == float(values.max())
    single = Stats.of(values)
    assert merged.mean == pytest.approx(single.mean, rel=1e-12)
    assert merged.m2 == pytest.approx(single.m2, rel=1e-10)


def test_merge_with_empty_keeps_nonfinite_counts():
    a = Stats.of([1.0, math.nan])
    b = Stats.of([math.inf])
    assert a.merge(b) == Stats(1, 1.0, 0.0, 1.0, 1.0, 2)
    assert b.merge(a) == Stats(1, 1.0, 0.0, 1.0, 1.0, 2)


def test_log_state_merge_prefix_and_logs():
    a = LogState({"score": Stats.of([1.0, 0.0])}, {"score/error_count": 1})
    b = LogState({"score": Stats.of([1.0]), "tokens": Stats.of([10.0])}, {"score/error_count": 2})
    merged = LogState.merge_all([a, b])
    logs = merged.to_logs()
    assert logs["score/count"] == 3
    assert logs["score/mean"] == pytest.approx(2 / 3)
    assert logs["tokens/mean"] == 10.0
    assert logs["score/error_count"] == 3
    assert next(iter(merged.prefixed("judge").to_logs())) == "judge/score/mean"
    assert LogState.merge_all([]).to_logs() == {}


def test_log_state_dict_round_trip_is_json():
    state = LogState(
        {"score": Stats.of([1.0, 2.0, math.nan]), "empty": Stats()}, {"score/error_count": 4}
    )
    data = json.loads(json.dumps(state.to_dict(), allow_nan=False))
    assert LogState.from_dict(data) == state


@pytest.mark.parametrize("bad", [{}, {"stats": {"x": {"count": 1}}, "counts": {}}, {"stats": 1}])
def test_log_state_from_bad_dict(bad):
    with pytest.raises(InvalidInputError, match=r"LogState\.to_dict"):
        LogState.from_dict(bad)


finite = st.floats(min_value=-1e12, max_value=1e12, allow_nan=False)


@given(st.lists(finite, max_size=50), st.lists(finite, max_size=50))
def test_merge_matches_single_pass_property(left, right):
    merged = Stats.of(left).merge(Stats.of(right))
    single = Stats.of(left + right)
    assert merged.count == single.count
    if single.count:
        scale = max(1.0, max(abs(v) for v in left + right))
        assert merged.mean == pytest.approx(single.mean, abs=1e-9 * scale)
        assert merged.std == pytest.approx(single.std, abs=1e-6 * scale)
        assert (merged.min, merged.max) == (single.min, single.max)


@given(st.lists(st.floats(allow_nan=True, allow_infinity=True)))
def test_any_floats_never_crash(values):
    stats = Stats.of(values)
    assert stats.count + stats.nonfinite == len(values)
    logs = stats.to_logs("k")
    assert logs["k/count"] == stats.count
