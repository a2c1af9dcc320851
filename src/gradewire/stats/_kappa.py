"""Cohen's κ and its weighted forms, from the margins of two raters' labels.

κ = 1 - (cost of the disagreements observed) / (cost expected by chance), where chance is
two raters labelling independently at their own rates (the confusion matrix's margins).
A disagreement costs 1 (Cohen 1960); with linear weights, the number of steps between the
two categories; with quadratic weights, its square (Cohen 1968). The steps are category
positions in the scale's order, as scikit-learn's ``cohen_kappa_score`` counts them.

The chance cost needs only the margins (sums over one rater's categories, with prefix
sums for linear weights), so no category × category matrix is built: many categories (a
judge's extracted answers compared with people's) cost memory in proportion to their
number, not its square.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import numpy.typing as npt

from gradewire.stats._margins import Margins
from gradewire.stats._resample import Statistic

__all__ = ["kappa"]

_Array = npt.NDArray[np.float64]


def kappa(
    a: npt.NDArray[np.int64],
    b: npt.NDArray[np.int64],
    k: int,
    weighting: Literal["none", "linear", "quadratic"],
) -> Statistic:
    """κ as a function of type weights (NaN where chance alone predicts no disagreement).

    Args:
        a: The first rater's category (position 0..k-1) of each type.
        b: The second rater's category of each type.
        k: The number of categories.
        weighting: ``"none"``, ``"linear"`` or ``"quadratic"``.
    """
    steps = np.abs(a - b).astype(np.float64)
    cost = {"none": (steps > 0).astype(np.float64), "linear": steps, "quadratic": steps**2}[
        weighting
    ]
    rows, columns = Margins(a), Margins(b)
    position = np.arange(k, dtype=np.float64)

    def statistic(weights: _Array) -> _Array:
        total = weights.sum(axis=1)
        r = rows.full(weights, k)
        c = columns.full(weights, k)
        observed = weights @ cost
        if weighting == "none":
            chance = total - np.sum(r * c, axis=1) / total
        elif weighting == "quadratic":
            chance = (
                r @ position**2 + c @ position**2 - 2.0 * (r @ position) * (c @ position) / total
            )
        else:
            # Σ_j |i - j| c_j for each i, from prefix sums of c and of j c_j.
            below = np.cumsum(c, axis=1)
            moment = np.cumsum(c * position, axis=1)
            distance = (
                position * below
                - moment
                + (moment[:, -1:] - moment)
                - position * (below[:, -1:] - below)
            )
            chance = np.sum(r * distance, axis=1) / total
        with np.errstate(divide="ignore", invalid="ignore"):
            value = 1.0 - observed / chance
        # Both raters on one and the same category: chance predicts no disagreement (0/0).
        same = (np.count_nonzero(r, axis=1) == 1) & (np.count_nonzero(c, axis=1) == 1)
        same &= r.argmax(axis=1) == c.argmax(axis=1)
        return np.where(same, np.nan, value)

    return statistic
