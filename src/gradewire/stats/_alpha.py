"""Krippendorff's α for any number of raters, with missing labels, at each level of measurement.

α = 1 - D_o / D_e: the disagreement observed within items over the disagreement expected
when the same labels are paired at random (Krippendorff 2004, ch. 11). Every item rated at
least twice is a unit; a unit with m labels contributes each ordered pair of its labels
with weight 1/(m - 1) to the coincidence matrix ``o``, whose margins ``n_c`` count the
pairable labels per value. The distance between two labels is, for a nominal scale, 0 or 1;
ordinal, the squared count of pairable labels from one category to the other, less half
of each end; interval, the squared difference. These are the definitions of the
``krippendorff`` package (``alpha(reliability_data, level_of_measurement=...)``).

Each form is computed from sums over units and over values, with no value × value matrix,
so it stays linear in the data however many distinct values there are: the ordinal
distance is the interval one on each category's mid-cumulative count.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from gradewire.stats._coding import Scale
from gradewire.stats._margins import Margins
from gradewire.stats._resample import Statistic

__all__ = ["alpha"]

_Array = npt.NDArray[np.float64]
# Relative size below which a computed disagreement may be rounding error on constant labels.
_TINY = 1e-10


def alpha(rows: npt.NDArray[np.int64], values: _Array, scale: Scale) -> Statistic:
    """α as a function of type weights.

    Args:
        rows: One row per type (unit pattern), one column per rater: a code into
            ``values``, -1 where the rater gave no label. Every row has two codes or more.
        values: The value of each code (category positions for nominal and ordinal).
        scale: The level of measurement.
    """
    present = rows >= 0
    pairable = present.sum(axis=1).astype(np.float64)
    low = np.where(present, rows, np.iinfo(np.int64).max).min(axis=1)
    high = np.where(present, rows, -1).max(axis=1)
    constant = _Constant(low, high)
    if scale == "interval":
        return _interval(rows, present, pairable, values, constant)
    unit, rater = np.nonzero(present)
    margins = Margins(rows[unit, rater], entries=unit)
    if scale == "nominal":
        return _nominal(rows, present, pairable, margins, constant)
    return _ordinal(rows, present, pairable, margins, constant)


class _Constant:
    """Whether every pairable label of the weighted units is one value (α is then 0/0)."""

    def __init__(self, low: npt.NDArray[np.int64], high: npt.NDArray[np.int64]) -> None:
        self._low = low
        self._high = high

    def __call__(self, weights: _Array) -> npt.NDArray[np.bool_]:
        present = weights > 0
        smallest = np.where(present, self._low[None, :], np.iinfo(np.int64).max).min(axis=1)
        largest = np.where(present, self._high[None, :], -1).max(axis=1)
        return np.asarray(smallest >= largest)


def _rater_pairs(
    rows: npt.NDArray[np.int64], present: npt.NDArray[np.bool_]
) -> list[tuple[npt.NDArray[np.intp], npt.NDArray[np.int64], npt.NDArray[np.int64]]]:
    """Per ordered pair of distinct raters: the units both rated, and the two codes."""
    pairs = []
    for r in range(rows.shape[1]):
        for s in range(rows.shape[1]):
            if r != s:
                unit = np.flatnonzero(present[:, r] & present[:, s])
                pairs.append((unit, rows[unit, r], rows[unit, s]))
    return pairs


def _nominal(
    rows: npt.NDArray[np.int64],
    present: npt.NDArray[np.bool_],
    pairable: _Array,
    margins: Margins,
    constant: _Constant,
) -> Statistic:
    different = np.zeros(rows.shape[0])
    for unit, first, second in _rater_pairs(rows, present):
        np.add.at(different, unit, (first != second).astype(np.float64))
    within = different / (pairable - 1.0)

    def statistic(weights: _Array) -> _Array:
        n = weights @ pairable
        expected = n**2 - np.sum(margins(weights) ** 2, axis=1)
        return _alpha(weights, n, weights @ within, expected, n**2, constant)

    return statistic


def _interval(
    rows: npt.NDArray[np.int64],
    present: npt.NDArray[np.bool_],
    pairable: _Array,
    values: _Array,
    constant: _Constant,
) -> Statistic:
    # Centred on a value of the data, so that equal labels give exact zeros.
    centred = values - values[values.size // 2]
    labels = np.where(present, centred[np.maximum(rows, 0)], 0.0)
    s1 = labels.sum(axis=1)
    s2 = np.sum(labels**2, axis=1)
    unit_mean = s1 / pairable
    spread = np.sum(np.where(present, (labels - unit_mean[:, None]) ** 2, 0.0), axis=1)
    # Σ over ordered pairs of labels (v_i - v_j)^2 = 2 m Σ (v_i - mean)^2; over m - 1.
    within = 2.0 * pairable * spread / (pairable - 1.0)

    def statistic(weights: _Array) -> _Array:
        n = weights @ pairable
        total = weights @ s1
        squares = n * (weights @ s2)
        expected = 2.0 * (squares - total**2)
        return _alpha(weights, n, weights @ within, expected, 2.0 * squares, constant)

    return statistic


def _ordinal(
    rows: npt.NDArray[np.int64],
    present: npt.NDArray[np.bool_],
    pairable: _Array,
    margins: Margins,
    constant: _Constant,
) -> Statistic:
    # The ordinal distance of categories c < k, (n_c + ... + n_k - (n_c + n_k) / 2)^2, is
    # (u_k - u_c)^2 with u the cumulative count at each category's middle: u_c = P_c - n_c/2.
    # So ordinal α is interval α on u, recomputed from each weighting's margins.
    pairs = _rater_pairs(rows, present)
    unit = np.concatenate([u for u, _, _ in pairs])
    first = np.searchsorted(margins.values, np.concatenate([f for _, f, _ in pairs]))
    second = np.searchsorted(margins.values, np.concatenate([s for _, _, s in pairs]))
    amount = 1.0 / (pairable[unit] - 1.0)

    def statistic(weights: _Array) -> _Array:
        n = weights @ pairable
        m = margins(weights)
        u = np.cumsum(m, axis=1) - m / 2.0
        observed = np.einsum(
            "be,e,be->b",
            weights[:, unit],
            amount,
            (u[:, first] - u[:, second]) ** 2,
        )
        squares = n * np.sum(m * u**2, axis=1)
        expected = 2.0 * (squares - np.sum(m * u, axis=1) ** 2)
        return _alpha(weights, n, observed, expected, 2.0 * squares, constant)

    return statistic


def _alpha(
    weights: _Array,
    n: _Array,
    observed: _Array,
    expected: _Array,
    scale: _Array,
    constant: _Constant,
) -> _Array:
    """α from its sums; NaN where every pairable label is one value.

    ``scale`` is the size ``expected`` would have without cancellation: rows whose
    ``expected`` is that small relative to it may be rounding error on constant labels,
    and are checked exactly.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        value = 1.0 - (n - 1.0) * observed / expected
    maybe = np.flatnonzero(expected <= _TINY * scale)
    if maybe.size:
        value[maybe[constant(weights[maybe])]] = np.nan
    return np.where(expected > 0.0, value, np.nan)
