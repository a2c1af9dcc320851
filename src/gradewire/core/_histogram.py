"""Histogram: counts over fixed bin edges, a log value that adds up exactly across ranks."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from gradewire.core._errors import InvalidInputError, InvalidTypeError
from gradewire.core._svg import bars
from gradewire.core._table import Table

__all__ = ["DEFAULT_EDGES", "MAX_BINS", "Histogram", "check_edges"]

DEFAULT_EDGES: tuple[float, ...] = tuple(i / 20 for i in range(21))
"""0.0, 0.05, ..., 1.0: twenty bins over the usual reward range."""

MAX_BINS = 512
"""The most bins a histogram may have (W&B's own limit for precomputed histograms)."""


def check_edges(edges: object) -> tuple[float, ...]:
    """``edges`` as a tuple of floats, or an error saying what bin edges must be."""
    if isinstance(edges, (str, bytes, Mapping)) or not isinstance(edges, Sequence | np.ndarray):
        raise InvalidTypeError(
            f"bin edges must be a sequence of numbers such as [0.0, 0.5, 1.0], not "
            f"{type(edges).__name__}"
        )
    try:
        values = tuple(float(e) for e in edges)
    except (TypeError, ValueError) as exc:
        raise InvalidTypeError(f"bin edges must all be numbers ({exc})") from None
    if len(values) < 2:
        raise InvalidInputError(f"a histogram needs at least 2 bin edges, got {len(values)}")
    if len(values) - 1 > MAX_BINS:
        raise InvalidInputError(
            f"{len(values) - 1} bins is over the limit of {MAX_BINS}; use fewer edges"
        )
    if not all(math.isfinite(e) for e in values):
        raise InvalidInputError(f"bin edges must be finite, got {list(values)}")
    if any(b <= a for a, b in itertools.pairwise(values)):
        raise InvalidInputError(f"bin edges must increase strictly, got {list(values)}")
    return values


@dataclass(frozen=True)
class Histogram:
    """Counts of values in fixed bins: ``counts[i]`` holds ``edges[i] <= x < edges[i + 1]``.

    The last bin also holds ``x == edges[-1]`` (numpy's convention). Values below the first
    edge or above the last are counted in ``below`` and ``above``; NaN values in
    ``nonfinite`` (infinities count as below or above). Because the edges are fixed, two
    histograms with the same edges merge by adding counts, so histograms from several
    ranks or steps add up exactly.

    Example:
        >>> h = Histogram.of([0.1, 0.5, 0.9, 1.0], edges=[0.0, 0.5, 1.0])
        >>> h.counts, h.total
        ((1, 3), 4)
    """

    edges: tuple[float, ...]
    counts: tuple[int, ...]
    below: int = 0
    above: int = 0
    nonfinite: int = 0

    def __post_init__(self) -> None:
        edges = check_edges(self.edges)
        counts = tuple(self.counts)
        if len(counts) != len(edges) - 1:
            raise InvalidInputError(
                f"a histogram with {len(edges)} edges has {len(edges) - 1} bins, but "
                f"{len(counts)} counts were given"
            )
        extra = (self.below, self.above, self.nonfinite)
        for count in (*counts, *extra):
            if isinstance(count, bool) or not isinstance(count, int | np.integer) or count < 0:
                raise InvalidInputError(f"histogram counts must be ints >= 0, got {count!r}")
        object.__setattr__(self, "edges", edges)
        object.__setattr__(self, "counts", tuple(int(c) for c in counts))
        for name, count in zip(("below", "above", "nonfinite"), extra, strict=True):
            object.__setattr__(self, name, int(count))

    @classmethod
    def empty(cls, edges: Sequence[float]) -> Histogram:
        """A histogram with no values over ``edges``."""
        checked = check_edges(edges)
        return cls(checked, (0,) * (len(checked) - 1))

    @classmethod
    def of(cls, values: npt.ArrayLike, edges: Sequence[float] = DEFAULT_EDGES) -> Histogram:
        """The histogram of ``values`` over ``edges``."""
        checked = check_edges(edges)
        x = np.asarray(values, dtype=np.float64).ravel()
        nan = np.isnan(x)
        nonfinite = int(np.count_nonzero(nan))
        if nonfinite:
            x = x[~nan]
        edge_array = np.asarray(checked)
        below = int(np.count_nonzero(x < edge_array[0]))
        above = int(np.count_nonzero(x > edge_array[-1]))
        inside = x[(x >= edge_array[0]) & (x <= edge_array[-1])]
        # searchsorted on fixed edges, so every rank bins a value the same way.
        index = np.searchsorted(edge_array, inside, side="right") - 1
        index = np.minimum(index, len(checked) - 2)  # x == last edge goes in the last bin
        counts = np.bincount(index, minlength=len(checked) - 1)
        return cls(checked, tuple(int(c) for c in counts), below, above, nonfinite)

    @property
    def total(self) -> int:
        """How many values were counted, in the bins or outside them (NaN included)."""
        return sum(self.counts) + self.below + self.above + self.nonfinite

    def merge(self, other: Histogram) -> Histogram:
        """Both histograms together; they must have the same edges."""
        if not isinstance(other, Histogram):
            raise InvalidTypeError(f"can only merge a Histogram, not {type(other).__name__}")
        if other.edges != self.edges:
            raise InvalidInputError(
                "histograms with different bin edges cannot be merged exactly; give every "
                f"rank the same edges ({list(self.edges)} vs {list(other.edges)})"
            )
        return Histogram(
            self.edges,
            tuple(a + b for a, b in zip(self.counts, other.counts, strict=True)),
            self.below + other.below,
            self.above + other.above,
            self.nonfinite + other.nonfinite,
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form: ``{"edges", "counts", "below", "above", "nonfinite"}``."""
        return {
            "edges": list(self.edges),
            "counts": list(self.counts),
            "below": self.below,
            "above": self.above,
            "nonfinite": self.nonfinite,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Histogram:
        """Rebuild a histogram written by `to_dict()`."""
        try:
            return cls(
                tuple(data["edges"]),
                tuple(data["counts"]),
                int(data.get("below", 0)),
                int(data.get("above", 0)),
                int(data.get("nonfinite", 0)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInputError(
                f"not a Histogram dict ({exc!r}); pass the output of Histogram.to_dict()"
            ) from exc

    def to_table(self) -> Table:
        """One row per bin (``bin_start``, ``bin_end``, ``count``), for table-only trackers.

        Values outside the edges get rows of their own, with an open end (None).
        """
        table = Table(initial_headers=["bin_start", "bin_end", "count"])
        if self.below:
            table.add_row([None, self.edges[0], self.below])
        for start, end, count in zip(self.edges, self.edges[1:], self.counts, strict=False):
            table.add_row([start, end, count])
        if self.above:
            table.add_row([self.edges[-1], None, self.above])
        return table

    def __repr__(self) -> str:
        return (
            f"Histogram({len(self.counts)} bins over [{self.edges[0]:g}, {self.edges[-1]:g}], "
            f"total={self.total})"
        )

    def _repr_html_(self) -> str:
        # The notebook view: the bars, and what fell outside them said in words.
        titles = [f"[{a:g}, {b:g})" for a, b in itertools.pairwise(self.edges)]
        titles[-1] = titles[-1][:-1] + "]"
        chart = bars(
            "histogram",
            self.counts,
            titles,
            ends=(f"{self.edges[0]:g}", f"{self.edges[-1]:g}"),
            width=360,
        )
        outside = [
            f"{count:,} {name}"
            for name, count in (
                ("below", self.below),
                ("above", self.above),
                ("NaN", self.nonfinite),
            )
            if count
        ]
        note = f"; {', '.join(outside)}" if outside else ""
        return (
            f'<div><div>{chart}</div><p style="font-family: sans-serif; font-size: 12px; '
            f'color: #555">{len(self.counts)} bins over [{self.edges[0]:g}, '
            f"{self.edges[-1]:g}], {self.total:,} values{note}</p></div>"
        )
