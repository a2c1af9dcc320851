"""A grader's scores as a histogram, from a run, a logged Histogram, or plain values."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from gradewire.core import Histogram, InvalidInputError, InvalidTypeError
from gradewire.eval import EvalRun
from gradewire.plot._matplotlib import axes_for

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["plot_histogram"]


def plot_histogram(
    source: EvalRun | Histogram | Sequence[float],
    grader: str | None = None,
    *,
    bins: int | Sequence[float] = 20,
    ax: Axes | None = None,
) -> Axes:
    """Draw a histogram of scores: one bar per bin.

    Args:
        source: An eval run (with ``grader``), a `Histogram` as logged (its own bins), or
            the values themselves.
        grader: The grader whose scores to draw, for a run (optional when it has one).
        bins: The number of equal bins, or their edges (not for a `Histogram`).
        ax: The Axes to draw on; None draws on a new figure.

    Returns:
        The Axes drawn on.

    Raises:
        InvalidInputError: No such grader, or no score to draw.
        InvalidTypeError: ``source`` is none of the above.
        MissingDependencyError: matplotlib is not installed (``gradewire[plot]``).
    """
    title = grader or ""
    if isinstance(source, Histogram):
        edges = np.asarray(source.edges)
        counts = np.asarray(source.counts)
        if source.total == 0:
            raise InvalidInputError("the histogram holds no values")
    else:
        if isinstance(source, EvalRun):
            grader = _grader_of(source, grader)
            title = grader
            values = list(source.scores(grader).values())
        elif isinstance(source, str | bytes) or not isinstance(source, Sequence | np.ndarray):
            raise InvalidTypeError(
                "plot_histogram takes an EvalRun, a Histogram or a sequence of scores, not "
                f"{type(source).__name__}"
            )
        else:
            values = [float(v) for v in source]
        finite = [v for v in values if math.isfinite(v)]
        if not finite:
            raise InvalidInputError(
                f"no finite score to draw{f' for {grader!r}' if grader else ''}"
            )
        counts, edges = np.histogram(finite, bins=bins)
    axes = axes_for(ax, "plot a histogram", figsize=(5, 3))
    axes.bar(edges[:-1], counts, width=np.diff(edges), align="edge", edgecolor="white")
    axes.set_xlabel(f"{title} score" if title else "score")
    axes.set_ylabel("samples")
    if title:
        axes.set_title(title)
    return axes


def _grader_of(run: EvalRun, grader: str | None) -> str:
    if grader is None:
        if len(run.graders) != 1:
            raise InvalidInputError(
                f"the run has graders {run.graders}: pass the one to draw, e.g. "
                f"plot_histogram(run, {run.graders[0]!r})"
                if run.graders
                else "the run has no grader"
            )
        return run.graders[0]
    if grader not in run.graders:
        raise InvalidInputError(f"the run has no grader {grader!r}; its graders are {run.graders}")
    return grader
