"""Krippendorff's α for any number of raters, with missing labels, at each level of measurement.

α = 1 - D_o / D_e: the disagreement observed within items over the disagreement expected
when the same labels are paired at random (Krippendorff 2004, ch. 11). Every item rated at
least twice is a unit; a unit with m labels contributes each ordered pair of its labels
with weight 1/(m - 1) to the coincidence matrix ``o``, whose margins ``n_c`` count the
pairable labels per value. The distance between two labels is, for a nominal scale, 0 or 1;
ordinal, the squared count of pairable labels from one category to the other, less half
of each end; interval, the squared difference. These are the definitions of the
``krippendorff`` package (``alpha(reliability_data, level_of_measurement=...)``).

The nominal and interval forms are sums over units of a few numbers each (no value × value
matrix), so they stay linear in the data however many distinct values there are.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from gradewire.stats._coding import Scale
from gradewire.stats._resample import Statistic

__all__ = ["alpha"]

_Array = npt.NDArray[np.float64]
# Elements of one block of value × value matrices in the ordinal form.
_BLOCK = 2_000_000
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
    margins = _Margins(unit, rows[unit, rater])
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


class _Margins:
    """The pairable labels per value (``n_c``), values in code order, from type weights."""

    def __init__(self, unit: npt.NDArray[np.intp], codes: npt.NDArray[np.int64]) -> None:
        order = np.argsort(codes, kind="stable")
        ordered = codes[order]
        self._unit = unit[order]
        self._starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]][: ordered.size])
        self.size = self._starts.size
        # Each code's position among the codes present (the ordinal distance needs no other).
        self.position = np.full(int(codes.max(initial=-1)) + 1, -1, dtype=np.intp)
        self.position[ordered[self._starts]] = np.arange(self.size)

    def __call__(self, weights: _Array) -> _Array:
        return np.asarray(np.add.reduceat(weights[:, self._unit], self._starts, axis=1))


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
    margins: _Margins,
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
    margins: _Margins,
    constant: _Constant,
) -> Statistic:
    v = margins.size
    pairs = _rater_pairs(rows, present)
    unit = np.concatenate([u for u, _, _ in pairs])
    first = margins.position[np.concatenate([f for _, f, _ in pairs])]
    second = margins.position[np.concatenate([s for _, _, s in pairs])]
    amount = 1.0 / (pairable[unit] - 1.0)
    order = np.argsort(first * v + second, kind="stable")
    unit, first, second, amount = unit[order], first[order], second[order], amount[order]
    flat = first * v + second
    starts = np.flatnonzero(np.r_[True, flat[1:] != flat[:-1]][: flat.size])
    cell_first, cell_second = first[starts], second[starts]
    i, j = np.indices((v, v))
    lo, hi = np.minimum(i, j), np.maximum(i, j)

    def statistic(weights: _Array) -> _Array:
        n = weights @ pairable
        every = margins(weights)
        coincidences = np.add.reduceat(weights[:, unit] * amount, starts, axis=1)
        observed = np.empty(weights.shape[0])
        expected = np.empty(weights.shape[0])
        rows_per_block = max(1, _BLOCK // (v * v))
        for start in range(0, weights.shape[0], rows_per_block):
            block = slice(start, start + rows_per_block)
            m = every[block]
            cumulative = np.cumsum(m, axis=1)
            # Pairable labels from category lo to category hi, less half of each end.
            between = cumulative[:, hi] - cumulative[:, lo] + m[:, lo]
            distance = (between - (m[:, i] + m[:, j]) / 2.0) ** 2
            observed[block] = np.sum(
                coincidences[block] * distance[:, cell_first, cell_second], axis=1
            )
            expected[block] = np.sum(m[:, :, None] * m[:, None, :] * distance, axis=(1, 2))
        return _alpha(weights, n, observed, expected, np.sum(every, axis=1) ** 4, constant)

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
