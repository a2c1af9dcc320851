import math

import numpy as np
import pytest

from gradewire import Histogram, InvalidInputError, InvalidTypeError


def test_bins_follow_numpy_and_count_the_rest_apart():
    values = [-1.0, 0.0, 0.1, 0.5, 0.99, 1.0, 2.0, math.nan, math.inf, -math.inf]
    edges = [0.0, 0.5, 1.0]
    h = Histogram.of(values, edges)
    inside = [v for v in values if 0.0 <= v <= 1.0]
    assert h.counts == tuple(np.histogram(inside, bins=edges)[0])
    assert h.counts == (2, 3)  # 1.0 lands in the last bin, as in numpy
    assert (h.below, h.above, h.nonfinite) == (2, 2, 1)
    assert h.total == len(values)


def test_histograms_with_the_same_edges_add_up_exactly():
    rng = np.random.default_rng(0)
    values = rng.normal(0.5, 0.3, 1000)
    parts = np.array_split(values, 7)
    merged = Histogram.of(parts[0])
    for part in parts[1:]:
        merged = merged.merge(Histogram.of(part))
    assert merged == Histogram.of(values)


def test_different_edges_do_not_merge():
    with pytest.raises(InvalidInputError, match="same edges"):
        Histogram.of([0.5], [0, 1]).merge(Histogram.of([0.5], [0, 0.5, 1]))


@pytest.mark.parametrize(
    ("edges", "error", "match"),
    [
        ([0.0], InvalidInputError, "at least 2"),
        ([0.0, 0.0], InvalidInputError, "increase"),
        ([1.0, 0.0], InvalidInputError, "increase"),
        ([0.0, math.inf], InvalidInputError, "finite"),
        ("0,1", InvalidTypeError, "sequence"),
        (list(range(600)), InvalidInputError, "512"),
    ],
)
def test_bad_edges_say_what_edges_must_be(edges, error, match):
    with pytest.raises(error, match=match):
        Histogram.of([0.5], edges)


def test_counts_must_fit_the_edges():
    with pytest.raises(InvalidInputError, match="2 bins"):
        Histogram((0.0, 0.5, 1.0), (1,))
    with pytest.raises(InvalidInputError, match=">= 0"):
        Histogram((0.0, 1.0), (-1,))


def test_dict_round_trip_and_table_view():
    h = Histogram.of([-0.5, 0.2, 0.7, 3.0], [0.0, 0.5, 1.0])
    assert Histogram.from_dict(h.to_dict()) == h
    assert h.to_table().to_dict() == {
        "columns": ["bin_start", "bin_end", "count"],
        "data": [[None, 0.0, 1], [0.0, 0.5, 1], [0.5, 1.0, 1], [1.0, None, 1]],
    }
    with pytest.raises(InvalidInputError, match=r"Histogram\.to_dict"):
        Histogram.from_dict({"edges": [0, 1]})
