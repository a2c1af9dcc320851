"""Mergeable summary statistics: the log state that ranks and workers combine exactly."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from gradewire.core._errors import InvalidInputError

__all__ = ["LogState", "Stats"]


@dataclass(frozen=True)
class Stats:
    """Count, mean, sum of squared deviations (M2), min and max of one logged key.

    Non-finite values are counted in ``nonfinite`` and kept out of every other field.
    Two `Stats` merge exactly (Chan et al.'s parallel formula), so per-rank statistics
    combine into the same figures a single pass over all values would give.
    """

    count: int = 0
    mean: float = 0.0
    m2: float = 0.0
    min: float = math.inf
    max: float = -math.inf
    nonfinite: int = 0

    @classmethod
    def of(cls, values: npt.ArrayLike) -> Stats:
        """Statistics of an array of numbers (non-finite values counted apart)."""
        x = np.asarray(values, dtype=np.float64).ravel()
        finite = np.isfinite(x)
        n = int(np.count_nonzero(finite))
        nonfinite = x.size - n
        if nonfinite:
            x = x[finite]
        if n == 0:
            return cls(nonfinite=nonfinite)
        with np.errstate(over="ignore", invalid="ignore"):
            mean = float(x.mean())
            if not math.isfinite(mean):
                # The sum overflowed although every value is finite: average scaled values.
                scale = float(np.abs(x).max())
                mean = float((x / scale).mean()) * scale
            deviations = x - mean
            # One correction pass: the mean of the deviations is the rounding left in the
            # mean (so equal values have exactly their value as mean, at any magnitude).
            shift = float(deviations.mean())
            if shift and math.isfinite(shift):
                mean += shift
                deviations -= shift
            # A ufunc sum, not np.dot: BLAS wakes its thread pool for a dot product, which
            # costs milliseconds on a busy machine for what is a 0.2 ms pass.
            m2 = float(np.square(deviations, out=deviations).sum())
        low, high = float(x.min()), float(x.max())
        return cls(n, min(max(mean, low), high), m2, low, high, nonfinite)

    @property
    def variance(self) -> float:
        """Sample variance (n - 1 in the denominator); 0.0 for a single value."""
        return self.m2 / (self.count - 1) if self.count > 1 else 0.0

    @property
    def std(self) -> float:
        """Sample standard deviation; 0.0 for a single value."""
        return math.sqrt(self.variance)

    def merge(self, other: Stats) -> Stats:
        """The statistics of both sets of values together."""
        if other.count == 0:
            return replace(self, nonfinite=self.nonfinite + other.nonfinite)
        if self.count == 0:
            return replace(other, nonfinite=self.nonfinite + other.nonfinite)
        n = self.count + other.count
        share = other.count / n
        delta = other.mean - self.mean
        if math.isfinite(delta):
            mean = self.mean + delta * share
            # delta * delta * n_a * n_b / n, with the factor inside so the square does not
            # overflow when the product itself fits.
            spread = delta * math.sqrt(self.count * share)
            m2 = self.m2 + other.m2 + spread * spread
        else:
            # Means so far apart that their difference overflows: a weighted sum keeps the
            # mean finite (as a single pass over the values is), and the spread is inf.
            mean = self.mean * (self.count / n) + other.mean * share
            m2 = math.inf
        low, high = min(self.min, other.min), max(self.max, other.max)
        # Rounding can leave the mean an ulp outside the values' range; it never is.
        mean = min(max(mean, low), high)
        return Stats(n, mean, m2, low, high, self.nonfinite + other.nonfinite)

    def to_logs(self, key: str) -> dict[str, float]:
        """``key/mean``, ``/std``, ``/min``, ``/max``, ``/count`` (+ ``/nonfinite_count``)."""
        logs: dict[str, float] = {}
        if self.count:
            logs[f"{key}/mean"] = self.mean
            logs[f"{key}/std"] = self.std
            logs[f"{key}/min"] = self.min
            logs[f"{key}/max"] = self.max
        logs[f"{key}/count"] = self.count
        if self.nonfinite:
            logs[f"{key}/nonfinite_count"] = self.nonfinite
        return logs


@dataclass(frozen=True)
class LogState:
    """The mergeable part of a grader's logs: `Stats` per numeric key, and event counts.

    Export it with `to_dict()` (plain JSON), send it across processes, rebuild it with
    `from_dict()` and merge: ``LogState.merge_all(states).to_logs()`` gives the statistics
    of all ranks' samples as one figure.

    Attributes:
        stats: Statistics per logged numeric key, in order of first appearance.
        counts: Event counts under their full metric names (``score/error_count``, ...).
    """

    stats: Mapping[str, Stats] = field(default_factory=dict)
    counts: Mapping[str, int] = field(default_factory=dict)

    def merge(self, other: LogState) -> LogState:
        """Both states together: stats merged per key, counts added."""
        stats = dict(self.stats)
        for key, value in other.stats.items():
            mine = stats.get(key)
            stats[key] = value if mine is None else mine.merge(value)
        counts = dict(self.counts)
        for key, count in other.counts.items():
            counts[key] = counts.get(key, 0) + count
        return LogState(stats, counts)

    @classmethod
    def merge_all(cls, states: Iterable[LogState]) -> LogState:
        """All states together (an empty iterable gives an empty state)."""
        merged = cls()
        for state in states:
            merged = merged.merge(state)
        return merged

    def prefixed(self, prefix: str) -> LogState:
        """The same state with every key under ``prefix/``."""
        return LogState(
            {f"{prefix}/{key}": value for key, value in self.stats.items()},
            {f"{prefix}/{key}": value for key, value in self.counts.items()},
        )

    def to_logs(self) -> dict[str, float]:
        """The flat metric dict `BaseGrader.get_logs()` returns ({} when nothing was logged)."""
        logs: dict[str, float] = {}
        for key, stats in self.stats.items():
            logs.update(stats.to_logs(key))
        logs.update(self.counts)
        return logs

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable form (infinite min/max of empty stats become None)."""
        return {
            "stats": {
                key: {
                    "count": s.count,
                    "mean": s.mean,
                    "m2": s.m2,
                    "min": s.min if s.count else None,
                    "max": s.max if s.count else None,
                    "nonfinite": s.nonfinite,
                }
                for key, s in self.stats.items()
            },
            "counts": dict(self.counts),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LogState:
        """Rebuild a state written by `to_dict()`."""
        try:
            stats = {
                key: Stats(
                    count=int(s["count"]),
                    mean=float(s["mean"]),
                    m2=float(s["m2"]),
                    min=math.inf if s["min"] is None else float(s["min"]),
                    max=-math.inf if s["max"] is None else float(s["max"]),
                    nonfinite=int(s["nonfinite"]),
                )
                for key, s in data["stats"].items()
            }
            counts = {key: int(value) for key, value in data["counts"].items()}
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise InvalidInputError(
                f"not a LogState dict ({exc!r}); pass the output of LogState.to_dict()"
            ) from exc
        return cls(stats, counts)
