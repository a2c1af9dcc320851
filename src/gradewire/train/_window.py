"""The mergeable figures of one logging window: per-grader logs, histograms, groups, lengths."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from gradewire.core import Histogram, InvalidInputError, LogState, LogValue
from gradewire.train._comoments import Comoments
from gradewire.train._health_window import HealthSeries

__all__ = ["Comoments", "GroupSpread", "SeriesWindow", "StepWindow"]

# Two rewards of a group count as equal (no spread) within this tolerance, as GRPO's own
# frac_reward_zero_std uses torch.isclose on the group std.
_SPREAD_RTOL = 1e-9
_SPREAD_ATOL = 1e-12


@dataclass(frozen=True)
class GroupSpread:
    """How many scored samples a group (one prompt's completions) has, and their range."""

    count: int
    min: float
    max: float

    def merge(self, other: GroupSpread) -> GroupSpread:
        """Both parts of a group together (its samples may sit on several ranks)."""
        return GroupSpread(
            self.count + other.count, min(self.min, other.min), max(self.max, other.max)
        )

    @property
    def zero_spread(self) -> bool:
        """Whether every scored sample of the group got the same reward."""
        return math.isclose(self.min, self.max, rel_tol=_SPREAD_RTOL, abs_tol=_SPREAD_ATOL)


@dataclass(frozen=True)
class SeriesWindow:
    """What one grader's (or sub-grader's) values of a window add up to."""

    histogram: Histogram
    length: Comoments = field(default_factory=Comoments)
    groups: Mapping[str, GroupSpread] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        values: npt.ArrayLike,
        lengths: npt.ArrayLike,
        groups: Iterable[str],
        edges: tuple[float, ...],
    ) -> SeriesWindow:
        """Histogram, length co-moments and group ranges of ``values`` (NaN: not scored)."""
        v = np.asarray(values, dtype=np.float64)
        scored = ~np.isnan(v)
        spreads: dict[str, GroupSpread] = {}
        for group, value, ok in zip(groups, v.tolist(), scored.tolist(), strict=True):
            if not ok:
                continue
            known = spreads.get(group)
            spreads[group] = (
                GroupSpread(1, value, value)
                if known is None
                else GroupSpread(known.count + 1, min(known.min, value), max(known.max, value))
            )
        return cls(Histogram.of(v[scored], edges), Comoments.of(v, lengths), spreads)

    def merge(self, other: SeriesWindow) -> SeriesWindow:
        """Both windows together (same edges)."""
        groups = dict(self.groups)
        for key, spread in other.groups.items():
            mine = groups.get(key)
            groups[key] = spread if mine is None else mine.merge(spread)
        return SeriesWindow(
            self.histogram.merge(other.histogram), self.length.merge(other.length), groups
        )

    def to_logs(self, key: str) -> dict[str, LogValue]:
        """``key/histogram``, ``key/length_corr``, ``key/groups``, ``key/zero_spread_frac``."""
        logs: dict[str, LogValue] = {f"{key}/histogram": self.histogram}
        outside = self.histogram.below + self.histogram.above
        if outside:
            logs[f"{key}/outside_edges_count"] = outside
        r = self.length.correlation
        if r is not None:
            logs[f"{key}/length_corr"] = r
        spreads = [s for s in self.groups.values() if s.count >= 2]
        if spreads:
            logs[f"{key}/groups"] = len(spreads)
            logs[f"{key}/zero_spread_frac"] = sum(s.zero_spread for s in spreads) / len(spreads)
        return logs

    def to_dict(self) -> dict[str, Any]:
        """A picklable, JSON-ready form."""
        c = self.length
        return {
            "histogram": self.histogram.to_dict(),
            "length": [c.count, c.mean_x, c.mean_y, c.m2_x, c.m2_y, c.c_xy],
            "groups": {k: [s.count, s.min, s.max] for k, s in self.groups.items()},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SeriesWindow:
        """Rebuild a window written by `to_dict()`."""
        n, mx, my, m2x, m2y, cxy = data["length"]
        return cls(
            Histogram.from_dict(data["histogram"]),
            Comoments(int(n), mx, my, m2x, m2y, cxy),
            {k: GroupSpread(int(c), lo, hi) for k, (c, lo, hi) in data["groups"].items()},
        )


@dataclass(frozen=True)
class StepWindow:
    """Everything a logging window adds up to, mergeable across ranks.

    Attributes:
        logs: Every grader's `LogState` under its grader key, plus derived statistics
            (a CombinedGrader's totals).
        health: The reward-health figures per grader path (gold pairs, a combination's
            variance shares, grading latency; see `HealthSeries`).
        series: The histogram, length co-moments and group ranges per grader path
            (``correct``, ``combo``, ``combo/format``...), for the values of the samples
            the logger saw.
    """

    logs: LogState = field(default_factory=LogState)
    series: Mapping[str, SeriesWindow] = field(default_factory=dict)
    health: Mapping[str, HealthSeries] = field(default_factory=dict)

    def merge(self, other: StepWindow) -> StepWindow:
        """Both windows together."""
        series = dict(self.series)
        for key, window in other.series.items():
            mine = series.get(key)
            series[key] = window if mine is None else mine.merge(window)
        health = dict(self.health)
        for key, figures in other.health.items():
            known = health.get(key)
            health[key] = figures if known is None else known.merge(figures)
        return StepWindow(self.logs.merge(other.logs), series, health)

    @classmethod
    def merge_all(cls, windows: Iterable[StepWindow]) -> StepWindow:
        """All windows together (none: an empty window)."""
        merged = cls()
        for window in windows:
            merged = merged.merge(window)
        return merged

    @property
    def empty(self) -> bool:
        """Whether nothing at all was logged in the window."""
        return not self.logs.stats and not self.logs.counts and not self.series and not self.health

    def to_logs(self, prefix: str | None) -> dict[str, LogValue]:
        """The flat dict a sink takes, every key under ``prefix/`` (when given)."""
        state = self.logs if prefix is None else self.logs.prefixed(prefix)
        logs: dict[str, LogValue] = dict(state.to_logs())
        for path, window in self.series.items():
            root = path if prefix is None else f"{prefix}/{path}"
            logs.update(window.to_logs(f"{root}/score"))
            length = window.length
            if length.count:
                logs[f"{root}/health/length_mean"] = length.mean_y
            if length.count >= 2:
                logs[f"{root}/health/length_std"] = math.sqrt(
                    max(length.m2_y, 0.0) / (length.count - 1)
                )
        for path, figures in self.health.items():
            root = path if prefix is None else f"{prefix}/{path}"
            logs.update(figures.to_logs(f"{root}/health"))
        return logs

    def to_dict(self) -> dict[str, Any]:
        """A picklable, JSON-ready form (what ranks exchange)."""
        return {
            "logs": self.logs.to_dict(),
            "series": {key: window.to_dict() for key, window in self.series.items()},
            "health": {key: figures.to_dict() for key, figures in self.health.items()},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StepWindow:
        """Rebuild a window written by `to_dict()`."""
        try:
            return cls(
                LogState.from_dict(data["logs"]),
                {k: SeriesWindow.from_dict(v) for k, v in data["series"].items()},
                {k: HealthSeries.from_dict(v) for k, v in data.get("health", {}).items()},
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInputError(
                f"not a StepWindow dict ({exc!r}); pass the output of StepWindow.to_dict()"
            ) from exc
