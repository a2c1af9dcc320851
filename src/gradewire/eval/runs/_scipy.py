"""SciPy, imported on first use: the t, binomial and normal distributions of the statistics."""

from __future__ import annotations

from typing import Any

from gradewire.core import MissingDependencyError

__all__ = ["scipy_stats"]


def scipy_stats() -> Any:
    """``scipy.stats``, or a `MissingDependencyError` naming the ``eval`` extra."""
    try:
        from scipy import stats
    except ImportError:
        raise MissingDependencyError(
            "scipy", extra="eval", purpose="compute eval intervals and p-values"
        ) from None
    return stats
