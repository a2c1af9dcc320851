"""Pearson's and Spearman's correlations of two raters' labels, from weighted item types.

Spearman's ρ is Pearson's r of the ranks, ties given their mean rank (as
``scipy.stats.spearmanr``); in a resample the ranks are those of the resampled items.
Either is undefined (NaN) when one rater gives every item the same value.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from gradewire.stats._margins import Margins
from gradewire.stats._resample import Statistic

__all__ = ["pearson", "spearman"]

_Array = npt.NDArray[np.float64]
# Relative size below which a computed variance may be rounding error on a constant.
_TINY = 1e-10


def pearson(
    x: _Array, y: _Array, x_codes: npt.NDArray[np.int64], y_codes: npt.NDArray[np.int64]
) -> Statistic:
    """Pearson's r of ``x`` and ``y`` (values per type; codes order them exactly)."""
    # Centred on the data's means once, so that the sums below lose no precision.
    xc = x - x.mean()
    yc = y - y.mean()
    moments = np.stack([np.ones_like(xc), xc, yc, xc * xc, yc * yc, xc * yc], axis=1)

    def statistic(weights: _Array) -> _Array:
        total, sx, sy, sxx, syy, sxy = (weights @ moments).T
        x_spread = sxx - sx * sx / total
        y_spread = syy - sy * sy / total
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.asarray(
                np.clip((sxy - sx * sy / total) / np.sqrt(x_spread * y_spread), -1.0, 1.0),
                dtype=np.float64,
            )
        # A variance computed in floating point may come out a hair above 0 where a rater
        # never varies: rows whose variance is that small are checked exactly.
        maybe = np.flatnonzero((x_spread <= _TINY * sxx) | (y_spread <= _TINY * syy))
        if maybe.size:
            rows = weights[maybe]
            constant = _constant(rows, x_codes) | _constant(rows, y_codes)
            r[maybe[constant]] = np.nan
        return r

    return statistic


def spearman(x_codes: npt.NDArray[np.int64], y_codes: npt.NDArray[np.int64]) -> Statistic:
    """Spearman's ρ of the values whose order the codes give (per type)."""
    x_groups = Margins(x_codes)
    y_groups = Margins(y_codes)

    def statistic(weights: _Array) -> _Array:
        total = weights.sum(axis=1)
        # The ranks of S items sum to S (S + 1) / 2, ties or not: their mean is (S + 1) / 2.
        centre = total * ((total + 1.0) / 2.0) ** 2
        x_per_value, x_mid = _midranks(x_groups, weights)
        y_per_value, y_mid = _midranks(y_groups, weights)
        sxx = np.sum(x_per_value * x_mid**2, axis=1) - centre
        syy = np.sum(y_per_value * y_mid**2, axis=1) - centre
        sxy = (
            np.einsum("bt,bt,bt->b", weights, x_mid[:, x_groups.column], y_mid[:, y_groups.column])
            - centre
        )
        with np.errstate(divide="ignore", invalid="ignore"):
            rho = np.clip(sxy / np.sqrt(sxx * syy), -1.0, 1.0)
        constant = (np.count_nonzero(x_per_value, axis=1) <= 1) | (
            np.count_nonzero(y_per_value, axis=1) <= 1
        )
        return np.where(constant, np.nan, rho)

    return statistic


def _constant(weights: _Array, codes: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    present = weights > 0
    low = np.where(present, codes[None, :], np.iinfo(np.int64).max).min(axis=1)
    high = np.where(present, codes[None, :], -1).max(axis=1)
    return np.asarray(low >= high)


def _midranks(values: Margins, weights: _Array) -> tuple[_Array, _Array]:
    """Weight per value, and the mean rank of the items holding each value."""
    per_value = values(weights)
    # A value held by w items after c smaller ones takes ranks c+1..c+w: their mean.
    return per_value, np.cumsum(per_value, axis=1) - (per_value - 1.0) / 2.0
