"""What the logger keeps of each graded sample until the step: values, lengths, groups."""

from __future__ import annotations

import hashlib
import json
import math
import numbers
from collections.abc import Callable, Sequence

from gradewire.core import (
    BaseGrader,
    CombinedGrader,
    Grade,
    Histogram,
    InvalidInputError,
    LogState,
    Stats,
    StringThread,
)
from gradewire.train._comoments import Comoments
from gradewire.train._health_window import LATENCY_EDGES, HealthSeries
from gradewire.train._window import SeriesWindow

__all__ = ["SampleRecorder", "default_group", "default_length"]

GROUP_KEY = "group"
"""A sample's ``metadata`` key that names its group (default: the prompt)."""

LENGTH_KEY = "completion_length"
"""A sample's ``metadata`` key with its completion length (default: characters)."""


def default_group(sample: StringThread) -> str:
    """``metadata["group"]`` when set, else the conversation before the last assistant turn.

    Samples that share a prompt form a group, as the completions of one prompt in GRPO.
    The key is a short hash, so that ranks exchange little.
    """
    named = sample.metadata.get(GROUP_KEY)
    if named is not None:
        text = f"group:{named}"
    else:
        turns = list(sample.turns)
        if turns and turns[-1].role == "assistant":
            turns.pop()
        text = json.dumps([[t.role, t.content] for t in turns], ensure_ascii=True)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def default_length(sample: StringThread) -> float:
    """``metadata["completion_length"]`` when it is a number, else the completion's characters."""
    length = sample.metadata.get(LENGTH_KEY)
    if isinstance(length, numbers.Real) and not isinstance(length, bool):
        return float(length)
    return float(len(sample.completion() or ""))


class _Series:
    __slots__ = ("groups", "lengths", "values")

    def __init__(self) -> None:
        self.values: list[float] = []
        self.lengths: list[float] = []
        self.groups: list[str] = []


class SampleRecorder:
    """Per grader path, the value, length and group of every sample since the last drain.

    Paths are grader keys, and ``combo/sub`` for the sub-graders of a `CombinedGrader`. A
    sample that got no grade is kept as NaN (left out of every figure but counted apart
    by the grader itself).
    """

    def __init__(self, edges: Callable[[str], tuple[float, ...]]) -> None:
        self._edges = edges
        self._series: dict[str, _Series] = {}
        self._totals: dict[str, tuple[list[float], list[float]]] = {}
        self._gold: dict[str, tuple[list[float], list[float]]] = {}
        self._shares: dict[str, dict[str, list[float]]] = {}
        self._latency: dict[str, list[float]] = {}

    def record(
        self,
        grader: BaseGrader,
        samples: Sequence[StringThread],
        grades: Sequence[Grade | None],
        *,
        groups: Sequence[str] | None = None,
        lengths: Sequence[float] | None = None,
        gold: Sequence[Grade | None] | None = None,
        latencies: Sequence[float] | None = None,
    ) -> None:
        """Keep what ``grades`` (one per sample, None: no grade) say about the samples.

        ``gold``: the gold reference's grade of each sample (None: not in the gold share,
        or no gold grade); ``latencies``: the seconds each grade took.
        """
        n = len(samples)
        if len(grades) != n:
            raise InvalidInputError(f"{len(grades)} grades for {n} samples; pass one per sample")
        keys = [default_group(s) for s in samples] if groups is None else [str(g) for g in groups]
        sizes = [default_length(s) for s in samples] if lengths is None else list(lengths)
        if len(keys) != n or len(sizes) != n:
            raise InvalidInputError(
                f"groups and lengths need one entry per sample ({n}), got {len(keys)} and "
                f"{len(sizes)}"
            )
        self._walk(grader, grader.grader_key, list(grades), keys, [float(x) for x in sizes])
        path = grader.grader_key
        if gold is not None:
            if len(gold) != n:
                raise InvalidInputError(f"{len(gold)} gold grades for {n} samples")
            proxy, reference = self._gold.setdefault(path, ([], []))
            for grade, check in zip(grades, gold, strict=True):
                if grade is not None and check is not None:
                    proxy.append(grade.value)
                    reference.append(check.value)
        if latencies is not None:
            self._latency.setdefault(path, []).extend(float(x) for x in latencies)

    def _walk(
        self,
        grader: BaseGrader,
        path: str,
        grades: list[Grade | None],
        groups: list[str],
        lengths: list[float],
    ) -> None:
        series = self._series.setdefault(path, _Series())
        series.values.extend(math.nan if g is None else g.value for g in grades)
        series.lengths.extend(lengths)
        series.groups.extend(groups)
        if not isinstance(grader, CombinedGrader):
            return
        weighted, unweighted = self._totals.setdefault(path, ([], []))
        shares = self._shares.setdefault(path, {})
        keys = [sub.grader_key for sub in grader.graders]
        for grade in grades:
            if grade is not None:
                weighted.append(grade.value)
                unweighted.append(_unweighted(grader, grade))
                parts = _contributions(grader, grade)
                for key in keys:
                    shares.setdefault(key, []).append(parts.get(key, 0.0))
        for sub in grader.graders:
            children = [_child(g, sub.grader_key) for g in grades]
            self._walk(sub, f"{path}/{sub.grader_key}", children, groups, lengths)

    def drain(self) -> tuple[LogState, dict[str, SeriesWindow], dict[str, HealthSeries]]:
        """The totals as statistics, every path's window and health figures; forget them."""
        stats: dict[str, Stats] = {}
        for path, (weighted, unweighted) in self._totals.items():
            stats[f"{path}/total/weighted"] = Stats.of(weighted)
            stats[f"{path}/total/unweighted"] = Stats.of(unweighted)
        series = {
            path: SeriesWindow.of(s.values, s.lengths, s.groups, self._edges(path))
            for path, s in self._series.items()
        }
        health: dict[str, HealthSeries] = {}
        for path in {*self._gold, *self._shares, *self._latency}:
            pairs = self._gold.get(path)
            total = self._totals.get(path, ([], []))[0]
            shares = {
                key: Comoments.of(parts, total) for key, parts in self._shares.get(path, {}).items()
            }
            latency = self._latency.get(path)
            health[path] = HealthSeries(
                Comoments() if pairs is None else Comoments.of(*pairs),
                shares,
                None if latency is None else Histogram.of(latency, LATENCY_EDGES),
            )
        self._series = {}
        self._totals = {}
        self._gold = {}
        self._shares = {}
        self._latency = {}
        return LogState(stats, {}), series, health

    def __len__(self) -> int:
        return sum(len(s.values) for s in self._series.values())


def _child(grade: Grade | None, key: str) -> Grade | None:
    if grade is None:
        return None
    for child in grade.children:
        if child.grader_key == key:
            return child
    return None


def _contributions(grader: CombinedGrader, grade: Grade) -> dict[str, float]:
    """What each sub-grade adds to the combined value (they add up to it)."""
    used = [child for child in grade.children if math.isfinite(child.value)]
    if grader.aggregation == "sum":
        return {c.grader_key: c.weight * c.value for c in used}
    weight = math.fsum(c.weight for c in used)
    if weight <= 0:
        return {}
    return {c.grader_key: c.weight * c.value / weight for c in used}


def _unweighted(grader: CombinedGrader, grade: Grade) -> float:
    """The grade's sub-values combined as the grader does, with every weight 1."""
    values = [child.value for child in grade.children]
    if not values:
        return grade.value
    total = math.fsum(values)
    return total if grader.aggregation == "sum" else total / len(values)
