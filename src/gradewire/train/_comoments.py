"""Co-moments of (x, y) pairs: the mergeable state behind a correlation or a covariance."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["Comoments"]


@dataclass(frozen=True)
class Comoments:
    """Count, means, sums of squared deviations and the co-moment of (x, y) pairs.

    Two of them merge exactly (the bivariate form of Chan et al.'s formula), so the
    correlation over several ranks equals the one over all pairs at once.
    """

    count: int = 0
    mean_x: float = 0.0
    mean_y: float = 0.0
    m2_x: float = 0.0
    m2_y: float = 0.0
    c_xy: float = 0.0

    @classmethod
    def of(cls, x: npt.ArrayLike, y: npt.ArrayLike) -> Comoments:
        """The co-moments of the pairs whose two values are both finite."""
        xs = np.asarray(x, dtype=np.float64).ravel()
        ys = np.asarray(y, dtype=np.float64).ravel()
        keep = np.isfinite(xs) & np.isfinite(ys)
        xs, ys = xs[keep], ys[keep]
        if xs.size == 0:
            return cls()
        mx, my = float(xs.mean()), float(ys.mean())
        dx, dy = xs - mx, ys - my
        return cls(int(xs.size), mx, my, float(dx @ dx), float(dy @ dy), float(dx @ dy))

    def merge(self, other: Comoments) -> Comoments:
        """Both sets of pairs together."""
        if other.count == 0:
            return self
        if self.count == 0:
            return other
        n = self.count + other.count
        dx = other.mean_x - self.mean_x
        dy = other.mean_y - self.mean_y
        weight = self.count * other.count / n
        return Comoments(
            n,
            self.mean_x + dx * other.count / n,
            self.mean_y + dy * other.count / n,
            self.m2_x + other.m2_x + dx * dx * weight,
            self.m2_y + other.m2_y + dy * dy * weight,
            self.c_xy + other.c_xy + dx * dy * weight,
        )

    @property
    def correlation(self) -> float | None:
        """Pearson's r; None with fewer than 2 pairs or when either side does not vary."""
        if self.count < 2 or self.m2_x <= 0.0 or self.m2_y <= 0.0:
            return None
        r = self.c_xy / math.sqrt(self.m2_x * self.m2_y)
        return max(-1.0, min(1.0, r))
