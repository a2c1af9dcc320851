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
between steps is counted in), made a long-run variance: the residual is not independent
from step to step (a slow wobble the two rewards do not share exactly), which MSSD
understates by ``1 - rho`` and a segment's mean feels as ``(1 + rho) / (1 - rho)``, so the
noise is multiplied by ``(1 + rho) / (1 - rho)**2``, with the lag-1 autocorrelation
``rho`` read off the reference steps (their residual variance against their own MSSD,
clipped to [0, 0.9]). Without it, an 8-step dip on a short reference passed for a fall
(22% of null segments with AR(1) noise of correlation 0.6 fell below -2 against a
nominal 2.3%, and 3.2% with it; the tests check the level). The statistic is the most
negative of these over the segments whose own gold is not rising (a segment still rising
is not a hack yet), a scan over the change point as in a generalised-likelihood-ratio
CUSUM.

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
    _gg: list[float] = field(default_factory=lambda: [0.0])
    _ig: list[float] = field(default_factory=lambda: [0.0])
    _last: tuple[float, float] | None = None
    # Prefix sums of the step-to-step differences (the first step's is 0).
    _dgg: list[float] = field(default_factory=lambda: [0.0])
    _dgp: list[float] = field(default_factory=lambda: [0.0])
    _dpp: list[float] = field(default_factory=lambda: [0.0])

    def add(self, gold: float, proxy: float) -> None:
        """Take one step's gold and training-reward means."""
        i = len(self._g) - 1
        self._g.append(self._g[-1] + gold)
        self._p.append(self._p[-1] + proxy)
        self._pp.append(self._pp[-1] + proxy * proxy)
        self._pg.append(self._pg[-1] + proxy * gold)
        self._gg.append(self._gg[-1] + gold * gold)
        self._ig.append(self._ig[-1] + i * gold)
        dg = dp = 0.0
        if self._last is not None:
            dg, dp = gold - self._last[0], proxy - self._last[1]
        self._dgg.append(self._dgg[-1] + dg * dg)
        self._dgp.append(self._dgp[-1] + dg * dp)
        self._dpp.append(self._dpp[-1] + dp * dp)
        self._last = (gold, proxy)

    def __len__(self) -> int:
        return len(self._g) - 1

    def test(self) -> LagResult | None:
        """The scan statistic at the latest step (None until there is enough history)."""
        n = len(self)
        g, p, pp, pg, gg, ig = self._g, self._p, self._pp, self._pg, self._gg, self._ig
        dgg, dgp, dpp = self._dgg, self._dgp, self._dpp
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
            noise = (dgg[n] - 2 * slope * dgp[n] + slope * slope * dpp[n]) / (2 * (n - 1))
            if noise <= 0:
                continue
            spread = noise * _long_run(
                gg[a] - gg[r0] - m * gm * gm,
                pg[a] - pg[r0] - m * pm * gm,
                sxx,
                slope,
                m,
                (dgg[a] - dgg[r0 + 1], dgp[a] - dgp[r0 + 1], dpp[a] - dpp[r0 + 1]),
            )
            expected = gm + slope * (ps - pm)
            spread *= 1 / length + 1 / m + (ps - pm) ** 2 / sxx
            z = (gs - expected) / math.sqrt(spread)
            if best is None or z < best.z:
                best = LagResult(z, a, slope, expected, gs)
        return best


def _long_run(
    syy: float, sxy: float, sxx: float, slope: float, m: int, diffs: tuple[float, float, float]
) -> float:
    """The factor from the per-step noise that MSSD measures to the long-run variance.

    The residual ``gold - a - b * proxy`` is not independent from step to step (the two
    rewards do not share every slow wobble exactly), and von Neumann's estimate then
    measures ``var * (1 - rho)`` while a mean over a segment varies as ``var * (1 + rho) /
    (1 - rho)``. ``rho`` (lag 1) is read from the reference steps: their residual variance
    against their MSSD, clipped to [0, 0.9].
    """
    var = (syy - 2 * slope * sxy + slope * slope * sxx) / max(m - 2, 1)
    dgg, dgp, dpp = diffs
    mssd = (dgg - 2 * slope * dgp + slope * slope * dpp) / max(m - 1, 1) / 2
    if var <= 0:
        return 1.0
    rho = min(max(1 - mssd / var, 0.0), 0.9)
    return (1 + rho) / (1 - rho) ** 2
