"""The gold-lag test: is the gold reference falling behind what the training reward predicts?

While a run is healthy, the gold reference and the training reward rise together: over any
stretch of steps the gold follows a line in the training reward, ``gold = a + b * proxy``
with ``b >= 0``. When the policy finds a shortcut, the training reward goes on rising and
the gold does not follow. At every step this test takes each recent segment (the last
``shortest`` to ``longest`` steps, 8 to 60), fits the line on the ``reference`` steps
before it (up to 200: a long reference makes the line's extrapolation precise),
and asks how far the segment's mean gold falls below the line's prediction, in standard
errors: the prediction error of ordinary least squares, with the step noise estimated by
von Neumann's mean squared successive difference of ``gold - b * proxy`` over the whole
history (so the noise the two rewards share, the prompt mix, is taken out, and any noise
between steps is counted in). The statistic is the most negative of these over the
segments whose own gold is not rising (a segment still rising is not a hack yet), a scan
over the change point as in a generalised-likelihood-ratio CUSUM.

Every sum comes from prefix sums, so a step costs O(longest) arithmetic, whatever the
run's length.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = ["GoldLag", "LagResult"]


@dataclass(frozen=True)
class LagResult:
    """The scan's most negative statistic, and the segment that gave it (positions)."""

    z: float
    start: int
    slope: float
    expected: float
    observed: float


@dataclass
class GoldLag:
    """The running state of the test for one grader (one gold, one training reward)."""

    shortest: int = 8
    longest: int = 60
    reference: int = 200
    least_reference: int = 20
    _g: list[float] = field(default_factory=lambda: [0.0])
    _p: list[float] = field(default_factory=lambda: [0.0])
    _pp: list[float] = field(default_factory=lambda: [0.0])
    _pg: list[float] = field(default_factory=lambda: [0.0])
    _ig: list[float] = field(default_factory=lambda: [0.0])
    _last: tuple[float, float] | None = None
    _dgg: float = 0.0
    _dgp: float = 0.0
    _dpp: float = 0.0

    def add(self, gold: float, proxy: float) -> None:
        """Take one step's gold and training-reward means."""
        i = len(self._g) - 1
        self._g.append(self._g[-1] + gold)
        self._p.append(self._p[-1] + proxy)
        self._pp.append(self._pp[-1] + proxy * proxy)
        self._pg.append(self._pg[-1] + proxy * gold)
        self._ig.append(self._ig[-1] + i * gold)
        if self._last is not None:
            dg, dp = gold - self._last[0], proxy - self._last[1]
            self._dgg += dg * dg
            self._dgp += dg * dp
            self._dpp += dp * dp
        self._last = (gold, proxy)

    def __len__(self) -> int:
        return len(self._g) - 1

    def test(self) -> LagResult | None:
        """The scan statistic at the latest step (None until there is enough history)."""
        n = len(self)
        g, p, pp, pg, ig = self._g, self._p, self._pp, self._pg, self._ig
        best: LagResult | None = None
        for length in range(self.shortest, self.longest + 1):
            a = n - length
            r0 = max(0, a - self.reference)
            m = a - r0
            if m < self.least_reference:
                break
            pm = (p[a] - p[r0]) / m
            gm = (g[a] - g[r0]) / m
            sxx = pp[a] - pp[r0] - m * pm * pm
            if sxx <= 0:
                continue
            slope = max((pg[a] - pg[r0] - m * pm * gm) / sxx, 0.0)
            gs = (g[n] - g[a]) / length
            ps = (p[n] - p[a]) / length
            centre = (a + n - 1) / 2
            if ig[n] - ig[a] - centre * (g[n] - g[a]) > 0:
                continue  # the segment's gold is still rising
            noise = (self._dgg - 2 * slope * self._dgp + slope * slope * self._dpp) / (2 * (n - 1))
            if noise <= 0:
                continue
            expected = gm + slope * (ps - pm)
            spread = noise * (1 / length + 1 / m + (ps - pm) ** 2 / sxx)
            z = (gs - expected) / math.sqrt(spread)
            if best is None or z < best.z:
                best = LagResult(z, a, slope, expected, gs)
        return best
