"""Cohen's κ and its weighted forms, from the confusion matrix of two raters.

κ = 1 - (cost of the disagreements observed) / (cost expected by chance), where chance is
two raters labelling independently at their own rates (the confusion matrix's margins).
A disagreement costs 1 (Cohen 1960); with linear weights, the number of steps between the
two categories; with quadratic weights, its square (Cohen 1968). The steps are category
positions in the scale's order, as scikit-learn's ``cohen_kappa_score`` counts them.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import numpy.typing as npt

from gradewire.stats._resample import Statistic

__all__ = ["confusion", "kappa"]


def confusion(
    weights: npt.NDArray[np.float64], cells: npt.NDArray[np.int64], k: int
) -> npt.NDArray[np.float64]:
    """Confusion matrices (one per row of ``weights``) from weights on distinct cells.

    Args:
        weights: Item weights per type, one row per weighting.
        cells: The cell ``row * k + column`` of each type (types are distinct cells).
        k: The number of categories.
    """
    out = np.zeros((weights.shape[0], k * k))
    out[:, cells] = weights
    return out.reshape(weights.shape[0], k, k)


def kappa(
    cells: npt.NDArray[np.int64], k: int, weighting: Literal["none", "linear", "quadratic"]
) -> Statistic:
    """κ as a function of type weights (NaN where chance alone predicts no disagreement)."""
    i, j = np.indices((k, k))
    if weighting == "none":
        cost = (i != j).astype(np.float64)
    elif weighting == "linear":
        cost = np.abs(i - j).astype(np.float64)
    else:
        cost = ((i - j) ** 2).astype(np.float64)

    def statistic(weights: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        matrix = confusion(weights, cells, k)
        rows = matrix.sum(axis=2)
        columns = matrix.sum(axis=1)
        total = rows.sum(axis=1)
        expected = rows[:, :, None] * columns[:, None, :] / total[:, None, None]
        observed = np.sum(cost * matrix, axis=(1, 2))
        chance = np.sum(cost * expected, axis=(1, 2))
        with np.errstate(divide="ignore", invalid="ignore"):
            value = 1.0 - observed / chance
        return np.where(chance > 0.0, value, np.nan)

    return statistic
