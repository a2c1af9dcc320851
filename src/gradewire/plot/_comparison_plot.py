"""A comparison as a forest plot: per grader, B − A with its interval, beside zero."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from gradewire.core import InvalidInputError
from gradewire.eval import Comparison
from gradewire.plot._matplotlib import axes_for

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["plot_comparison"]

_BETTER, _WORSE, _UNCLEAR = "#2e7d32", "#c62828", "#555555"


def plot_comparison(comparison: Comparison, *, ax: Axes | None = None) -> Axes:
    """Draw each grader's difference B − A as a point with its interval (a forest plot).

    Green: the interval is above 0 (B better); red: below 0 (A better); grey: it
    includes 0. Graders without an interval (nothing paired) are listed but not drawn.

    Args:
        comparison: What `compare_runs` returned.
        ax: The Axes to draw on; None draws on a new figure.

    Returns:
        The Axes drawn on.

    Raises:
        InvalidInputError: The comparison has no grader.
        MissingDependencyError: matplotlib is not installed (``gradewire[plot]``).
    """
    graders = comparison.graders
    if not graders:
        raise InvalidInputError("the comparison has no grader the two runs share")
    axes = axes_for(ax, "plot a comparison", figsize=(6, 0.6 + 0.5 * len(graders)))
    for row, g in enumerate(graders):
        if not all(math.isfinite(v) for v in (g.diff, g.ci_low, g.ci_high)):
            continue
        colour = _BETTER if g.ci_low > 0 else _WORSE if g.ci_high < 0 else _UNCLEAR
        axes.errorbar(
            [g.diff],
            [row],
            xerr=[[g.diff - g.ci_low], [g.ci_high - g.diff]],
            fmt="o",
            color=colour,
            capsize=4,
        )
    axes.axvline(0.0, color="grey", linestyle="--", linewidth=1)
    axes.set_yticks(range(len(graders)), [g.grader for g in graders])
    axes.set_ylim(len(graders) - 0.5, -0.5)  # the first grader on top, as listed
    level = f"{graders[0].confidence:.0%}"
    axes.set_xlabel(f"B − A ({comparison.run_b} − {comparison.run_a}), {level} interval")
    return axes
