"""The mergeable reward-health figures of one window: gold pairs, dominance, latency.

Everything here merges exactly across ranks, as the rest of a `StepWindow` does: the
proxy/gold pairs and each component's contribution against its total are co-moments
(count, means, sums of squares, cross-products; Chan's merge), latencies are counts over
fixed log-spaced bins. The latency quantiles read from those bins are the one
approximate figure (within one bin: a factor of 10^(1/16), about ±7.5%, around the true
quantile).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gradewire.core import Histogram, LogValue
from gradewire.train._comoments import Comoments

__all__ = ["LATENCY_EDGES", "HealthSeries", "histogram_quantile"]

_BINS_PER_DECADE = 16
LATENCY_EDGES: tuple[float, ...] = tuple(
    float(10.0 ** (k / _BINS_PER_DECADE))
    for k in range(-5 * _BINS_PER_DECADE, 4 * _BINS_PER_DECADE + 1)
)
"""Latency bin edges in seconds: 10 µs to 10,000 s, 16 log-spaced bins a decade."""


def histogram_quantile(histogram: Histogram, q: float) -> float | None:
    """The ``q`` quantile of the counted values, geometric within its bin (None: no values).

    Values below the first edge read as the first edge, above the last as the last edge:
    the figure is approximate to one bin's width, and exact in which bin it falls.
    """
    inside = np.asarray(histogram.counts, dtype=np.float64)
    total = histogram.below + float(inside.sum()) + histogram.above
    if total <= 0:
        return None
    rank = q * total
    if rank <= histogram.below:
        return histogram.edges[0]
    cumulative = histogram.below + np.cumsum(inside)
    index = int(np.searchsorted(cumulative, rank, side="left"))
    if index >= len(inside):
        return histogram.edges[-1]
    lo, hi = histogram.edges[index], histogram.edges[index + 1]
    before = cumulative[index] - inside[index]
    share = (rank - before) / inside[index] if inside[index] else 0.5
    share = min(1.0, max(0.0, share))
    if lo > 0:
        return float(lo * (hi / lo) ** share)
    return float(lo + (hi - lo) * share)


@dataclass(frozen=True)
class HealthSeries:
    """The health figures of one grader path (``correct``, ``combo``...) over a window.

    Attributes:
        gold: Co-moments of (training reward, gold reward) over the samples graded by both.
        dominance: Per component of a `CombinedGrader`, co-moments of (the component's
            contribution to the total, the total), over the samples with a total.
        latency: Seconds per grade, over `LATENCY_EDGES` (only where the logger graded).
    """

    gold: Comoments = field(default_factory=Comoments)
    dominance: Mapping[str, Comoments] = field(default_factory=dict)
    latency: Histogram | None = None

    def merge(self, other: HealthSeries) -> HealthSeries:
        """Both windows together."""
        dominance = dict(self.dominance)
        for key, moments in other.dominance.items():
            mine = dominance.get(key)
            dominance[key] = moments if mine is None else mine.merge(moments)
        if self.latency is None:
            latency = other.latency
        elif other.latency is None:
            latency = self.latency
        else:
            latency = self.latency.merge(other.latency)
        return HealthSeries(self.gold.merge(other.gold), dominance, latency)

    def to_logs(self, key: str) -> dict[str, LogValue]:
        """The flat figures under ``key`` (``<prefix>/<path>/health``).

        ``gold/pairs``, ``gold/proxy_mean``, ``gold/gold_mean``, ``gold/proxy_std``,
        ``gold/gold_std`` and ``gold/corr`` over the samples graded by both, with
        ``gold/corr_undefined`` (1.0 when there were pairs but no correlation: fewer than
        two, or one side constant, as a verifier that passes every sample; else 0.0);
        ``dominance/<component>``: the component's share of the total's variance
        (``cov(contribution, total) / var(total)``; the shares add up to 1, and a share
        near 1 means one component carries the whole signal); ``latency_p50`` /
        ``latency_p99`` in seconds and ``latency_count``.
        """
        logs: dict[str, LogValue] = {}
        g = self.gold
        if g.count:
            logs[f"{key}/gold/pairs"] = g.count
            logs[f"{key}/gold/proxy_mean"] = g.mean_x
            logs[f"{key}/gold/gold_mean"] = g.mean_y
            if g.count >= 2:
                logs[f"{key}/gold/proxy_std"] = math.sqrt(max(g.m2_x, 0.0) / (g.count - 1))
                logs[f"{key}/gold/gold_std"] = math.sqrt(max(g.m2_y, 0.0) / (g.count - 1))
            r = g.correlation
            if r is not None:
                logs[f"{key}/gold/corr"] = r
            # Said, not left out (as length_corr_undefined): a constant side has no
            # correlation, and its absence must not read as a logging fault.
            logs[f"{key}/gold/corr_undefined"] = 0.0 if r is not None else 1.0
        for component, moments in self.dominance.items():
            if moments.count >= 2 and moments.m2_y > 0.0:
                logs[f"{key}/dominance/{component}"] = moments.c_xy / moments.m2_y
        if self.latency is not None and self.latency.total:
            for name, q in (("latency_p50", 0.5), ("latency_p99", 0.99)):
                value = histogram_quantile(self.latency, q)
                if value is not None:
                    logs[f"{key}/{name}"] = value
            logs[f"{key}/latency_count"] = self.latency.total
        return logs

    def to_dict(self) -> dict[str, Any]:
        """A picklable, JSON-ready form."""
        return {
            "gold": _moments_list(self.gold),
            "dominance": {k: _moments_list(m) for k, m in self.dominance.items()},
            "latency": None if self.latency is None else list(self.latency.counts),
            "latency_out": None
            if self.latency is None
            else [self.latency.below, self.latency.above, self.latency.nonfinite],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> HealthSeries:
        """Rebuild a series written by `to_dict()`."""
        latency = None
        if data["latency"] is not None:
            below, above, nonfinite = data["latency_out"]
            latency = Histogram(
                LATENCY_EDGES, tuple(int(c) for c in data["latency"]), below, above, nonfinite
            )
        return cls(
            _moments(data["gold"]),
            {k: _moments(v) for k, v in data["dominance"].items()},
            latency,
        )


def _moments_list(c: Comoments) -> list[float]:
    return [c.count, c.mean_x, c.mean_y, c.m2_x, c.m2_y, c.c_xy]


def _moments(data: Any) -> Comoments:
    n, mx, my, m2x, m2y, cxy = data
    return Comoments(int(n), float(mx), float(my), float(m2x), float(m2y), float(cxy))
