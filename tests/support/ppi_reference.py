"""PPI's interval as ppi_py computes it, in the form gradewire uses at each label count.

From 100 labels on, ``ppi_py.ppi_mean_ci`` itself. Below, its small-sample form: the same λ
(ppi_py's own power tuning) and point estimate, with Student's t (n - 1 df) over variances
that divide by n - 1, computed here from ppi_py's pieces and scipy's t quantile.
"""

from __future__ import annotations

import numpy as np
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate
from ppi_py.ppi import _calc_lam_glm
from scipy import stats

__all__ = ["ppi_interval"]


def ppi_interval(
    y: np.ndarray, f: np.ndarray, unlabelled: np.ndarray, *, alpha: float, lam: float | None = None
) -> tuple[float, float]:
    """The PPI interval of labels ``y``, their judge scores ``f`` and the unlabelled scores."""
    n = y.size
    if n >= 100:
        low, high = ppi_mean_ci(y, f, unlabelled, alpha=alpha, lam=lam)
        return float(low[0]), float(high[0])
    if lam is None:  # ppi_mean_ci's own tuning, step by step
        start = ppi_mean_pointestimate(y, f, unlabelled, lam=1)
        lam = float(
            _calc_lam_glm(
                (y - start)[:, None],
                (f - start)[:, None],
                (unlabelled - start)[:, None],
                np.eye(1),
                coord=None,
                clip=True,
                optim_mode="overall",
            )
        )
    estimate = float(ppi_mean_pointestimate(y, f, unlabelled, lam=lam)[0])
    se = np.sqrt(
        np.var(lam * unlabelled, ddof=1) / unlabelled.size + np.var(y - lam * f, ddof=1) / n
    )
    half = float(stats.t.ppf(1 - alpha / 2, n - 1)) * se
    return estimate - half, estimate + half
