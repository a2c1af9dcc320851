"""Bootstrap intervals of statistics computed from weighted item types.

Items that carry the same labels are one *type*; a statistic is a function of how many
items of each type a sample holds (a weight per type), computed for many weightings at once
(one row each). A bootstrap resample is such a weighting: items (or whole clusters of
items) drawn with replacement. So is a jackknife sample (one item or cluster left out).

The interval is BCa (bias-corrected and accelerated, Efron 1987): κ, α and correlations
have skewed, biased sampling distributions near their bounds, which the percentile interval
ignores and BCa corrects (it is second-order accurate where the percentile interval is
first-order). Its acceleration comes from the jackknife, which here costs one statistic
evaluation per item type (or cluster), not per item, and beyond 1,000 of them one per
random group of items (or clusters), 1,000 groups. Where BCa is undefined (every resample
on one side of the estimate, or an undefined jackknife value) the percentile interval is
given and the note says so; where the statistic is undefined in some resample, or every
resample gives the same value, no interval is given and the note says why.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

__all__ = [
    "BcaConstants",
    "Interval",
    "ItemTypes",
    "Statistic",
    "bca_constants",
    "bootstrap_intervals",
]

Weights = npt.NDArray[np.float64]
Statistic = Callable[[Weights], npt.NDArray[np.float64]]
"""Weights per item type (one row per weighting) → the statistic of each row."""

_NORMAL = NormalDist()
# Elements of one block of weights: about 16 MB of float64, whatever the data's size.
_BLOCK = 2_000_000
# Jackknife samples at most: beyond, random groups of items (or clusters) are left out.
_JACKKNIFE_GROUPS = 1_000


@dataclass(frozen=True)
class ItemTypes:
    """Items grouped by what they carry.

    Attributes:
        rows: One row per type (whatever identifies it: its codes).
        of_item: The type of each item.
        counts: Items per type.
    """

    rows: npt.NDArray[np.int64]
    of_item: npt.NDArray[np.intp]
    counts: npt.NDArray[np.float64]

    @classmethod
    def of(cls, codes: npt.NDArray[np.int64]) -> ItemTypes:
        """Group the rows of ``codes`` (one per item) into types."""
        if codes.shape[0] == 0:
            empty = np.zeros((0, codes.shape[1]), dtype=np.int64)
            return cls(empty, np.zeros(0, dtype=np.intp), np.zeros(0))
        rows, of_item, counts = np.unique(codes, axis=0, return_inverse=True, return_counts=True)
        return cls(rows, of_item.reshape(-1).astype(np.intp), counts.astype(np.float64))


@dataclass(frozen=True)
class Interval:
    """A bootstrap interval, or the reason there is none.

    Attributes:
        low: Lower end (NaN when there is no interval).
        high: Upper end (NaN when there is no interval).
        method: ``"BCa"`` or ``"percentile"``; empty when there is no interval.
        note: Why there is no interval, or why it is a percentile one; None otherwise.
    """

    low: float
    high: float
    method: str
    note: str | None


def bootstrap_intervals(
    statistics: Mapping[str, Statistic],
    estimates: Mapping[str, float],
    types: ItemTypes,
    *,
    clusters: npt.NDArray[np.intp] | None,
    n_resamples: int,
    confidence: float,
    seed: int,
) -> dict[str, Interval]:
    """BCa intervals of every statistic, over resampled items or clusters.

    Args:
        statistics: Name → the statistic as a function of type weights.
        estimates: Name → the statistic on the data (NaN: no interval is computed).
        types: The items' types.
        clusters: The cluster code (0..G-1) of each item; None resamples items.
        n_resamples: Bootstrap resamples.
        confidence: The intervals' level.
        seed: Seed of the random generator.
    """
    rng = np.random.default_rng(seed)
    names = [name for name in statistics if math.isfinite(estimates[name])]
    if not names:
        return {}
    boot = {name: np.empty(n_resamples) for name in names}
    for start, weights in _resamples(types, clusters, n_resamples, rng):
        for name in names:
            boot[name][start : start + weights.shape[0]] = statistics[name](weights)
    jack = {name: [] for name in names}  # type: dict[str, list[npt.NDArray[np.float64]]]
    multiplicity = []
    for weights, times in _jackknife(types, clusters, rng):
        multiplicity.append(times)
        for name in names:
            jack[name].append(statistics[name](weights))
    times = np.concatenate(multiplicity)
    return {
        name: _bca(estimates[name], boot[name], np.concatenate(jack[name]), times, confidence)
        for name in names
    }


def _resamples(
    types: ItemTypes,
    clusters: npt.NDArray[np.intp] | None,
    n_resamples: int,
    rng: np.random.Generator,
) -> Iterator[tuple[int, Weights]]:
    n = types.of_item.size
    t = types.counts.size
    if clusters is None and t * 8 <= n:
        # Few types: the counts per type of n items drawn with replacement are multinomial.
        draws = rng.multinomial(n, types.counts / n, size=n_resamples)
        yield 0, draws.astype(np.float64)
        return
    g = n if clusters is None else int(clusters.max()) + 1
    rows = max(1, _BLOCK // max(n, t, g))
    per_cluster = None
    if clusters is not None and g * t <= _BLOCK:
        # Items per type in each cluster: a resample's weights are then one product.
        per_cluster = np.zeros((g, t))
        np.add.at(per_cluster, (clusters, types.of_item), 1.0)
    for start in range(0, n_resamples, rows):
        b = min(rows, n_resamples - start)
        offsets = np.arange(b)[:, None]
        if clusters is None:
            drawn = types.of_item[rng.integers(0, n, size=(b, n))]
            flat = np.bincount((drawn + t * offsets).ravel(), minlength=b * t)
        else:
            picked = rng.integers(0, g, size=(b, g))
            times = np.bincount((picked + g * offsets).ravel(), minlength=b * g).reshape(b, g)
            if per_cluster is not None:
                yield start, times.astype(np.float64) @ per_cluster
                continue
            per_item = times[:, clusters]
            flat = np.bincount(
                (types.of_item[None, :] + t * offsets).ravel(),
                weights=per_item.ravel(),
                minlength=b * t,
            )
        yield start, flat.reshape(b, t).astype(np.float64)


def _jackknife(
    types: ItemTypes, clusters: npt.NDArray[np.intp] | None, rng: np.random.Generator
) -> Iterator[tuple[Weights, npt.NDArray[np.float64]]]:
    """Leave-one-out weightings, each with how many leave-one-out samples it stands for."""
    t = types.counts.size
    rows = max(1, _BLOCK // max(t, 1))
    if clusters is None and t <= _JACKKNIFE_GROUPS:
        # Leaving out any one item of a type gives the same sample: one row per type.
        for start in range(0, t, rows):
            stop = min(t, start + rows)
            weights = np.broadcast_to(types.counts, (stop - start, t)).copy()
            weights[np.arange(stop - start), np.arange(start, stop)] -= 1.0
            yield weights, types.counts[start:stop]
        return
    units = types.of_item.size if clusters is None else int(clusters.max()) + 1
    groups = min(units, _JACKKNIFE_GROUPS)
    # Beyond _JACKKNIFE_GROUPS items (clusters), leave out random groups of them instead:
    # a group's influence is the sum of its members', so the acceleration's estimate
    # (third over second moment of the influences) keeps its expectation.
    group_of_unit = np.empty(units, dtype=np.intp)
    group_of_unit[rng.permutation(units)] = np.arange(units) % groups
    group = group_of_unit if clusters is None else group_of_unit[clusters]
    order = np.argsort(group, kind="stable")
    bounds = np.searchsorted(group[order], np.arange(groups + 1))
    for start in range(0, groups, rows):
        stop = min(groups, start + rows)
        members = order[bounds[start] : bounds[stop]]
        left_out = np.zeros((stop - start, t))
        np.add.at(left_out, (group[members] - start, types.of_item[members]), 1.0)
        yield types.counts[None, :] - left_out, np.ones(stop - start)


@dataclass(frozen=True)
class BcaConstants:
    """BCa's bias correction ``z0`` and acceleration ``a`` (Efron 1987).

    The one implementation of BCa's level adjustment: agreement intervals and the paired
    bootstrap of `gradewire compare` both read their quantiles through it.
    """

    z0: float
    acceleration: float

    def level(self, nominal: float) -> float:
        """The level of the bootstrap quantile that ends a BCa interval at ``nominal``."""
        z = self.z0 + _NORMAL.inv_cdf(nominal)
        return _NORMAL.cdf(self.z0 + z / (1.0 - self.acceleration * z))

    def nominal(self, level: float) -> float:
        """The inverse of `level`: the nominal level whose BCa quantile is at ``level``."""
        if level <= 0.0:
            return 0.0
        if level >= 1.0:
            return 1.0
        w = _NORMAL.inv_cdf(level) - self.z0
        return _NORMAL.cdf(w / (1.0 + self.acceleration * w) - self.z0)


PERCENTILE = BcaConstants(0.0, 0.0)
"""No correction: the percentile interval's levels."""


def bca_constants(
    estimate: float,
    boot: npt.NDArray[np.float64],
    jack: npt.NDArray[np.float64],
    times: npt.NDArray[np.float64] | None = None,
) -> BcaConstants | str:
    """BCa's constants from the resamples and the jackknife, or why BCa is undefined.

    Args:
        estimate: The statistic on the data.
        boot: The statistic on each bootstrap resample (all finite).
        jack: The statistic with each item (or cluster, or group) left out.
        times: How many items each jackknife value stands for (None: one each).
    """
    below = np.count_nonzero(boot < estimate) + 0.5 * np.count_nonzero(boot == estimate)
    share = below / boot.size
    if not bool(np.all(np.isfinite(jack))):
        return "the statistic is undefined with one item (or cluster) left out"
    weights = np.ones(jack.size) if times is None else times
    spread = float(np.sum(weights * jack) / weights.sum()) - jack
    denominator = 6.0 * float(np.sum(weights * spread**2)) ** 1.5
    if not 0.0 < share < 1.0:
        return "every resample falls on one side of the estimate"
    if denominator == 0.0:
        return "leaving out any one item (or cluster) changes nothing"
    acceleration = float(np.sum(weights * spread**3)) / denominator
    return BcaConstants(_NORMAL.inv_cdf(share), acceleration)


def _bca(
    estimate: float,
    boot: npt.NDArray[np.float64],
    jack: npt.NDArray[np.float64],
    times: npt.NDArray[np.float64],
    confidence: float,
) -> Interval:
    undefined = int(np.count_nonzero(~np.isfinite(boot)))
    if undefined:
        return Interval(
            math.nan,
            math.nan,
            "",
            f"undefined in {undefined} of {boot.size} bootstrap resamples (too few items "
            "to vary), so no interval: label more items",
        )
    if boot.min() == boot.max():
        return Interval(
            math.nan,
            math.nan,
            "",
            f"every bootstrap resample gives {estimate:.6g}, so the bootstrap cannot show "
            "how uncertain it is: label more items",
        )
    tail = (1.0 - confidence) / 2.0
    constants = bca_constants(estimate, boot, jack, times)
    if isinstance(constants, str):
        low, high = np.quantile(boot, [tail, 1.0 - tail])
        return Interval(
            float(low),
            float(high),
            "percentile",
            f"percentile interval: BCa is undefined ({constants})",
        )
    low, high = np.quantile(boot, [constants.level(tail), constants.level(1.0 - tail)])
    return Interval(float(low), float(high), "BCa", None)
