"""Power of a paired comparison: what a run's n can detect, and the n a planned one needs.

A paired difference is tested on ``d = b - a``, whose spread is
``sd_d² = sd_a² + sd_b² - 2 ρ sd_a sd_b``: the more the two runs agree sample by sample
(pairing correlation ρ), the fewer samples a difference needs. With clusters every
sample counts for less by the design effect ``(clustered stderr / naive stderr)²``.

- `minimum_detectable_difference`: the smallest true difference a two-sided test at the
  level finds with the given power, ``(z_{1-α/2} + z_power) · stderr``.
- `samples_needed`: the smallest n whose paired t-test (noncentral t, both tails, as
  `statsmodels.stats.power.TTestPower` computes it) reaches the power, times the design
  effect.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from gradewire.core import InvalidInputError
from gradewire.eval.runs._scipy import scipy_stats

__all__ = [
    "POWER",
    "PowerPlan",
    "minimum_detectable_difference",
    "paired_t_power",
    "plan_from_pilot",
    "samples_needed",
]

# The conventional power a planned comparison aims for (Cohen 1988).
POWER = 0.8


def minimum_detectable_difference(
    stderr: float, confidence: float = 0.95, power: float = POWER, dof: float = math.inf
) -> float:
    """The true difference found with ``power`` by a two-sided test at ``1 - confidence``.

    ``(q_{1-α/2} + q_power) · stderr`` with normal quantiles, or Student's t quantiles on
    ``dof`` degrees of freedom when the test is a t test (few clusters need far larger
    differences than the normal suggests). NaN when the standard error is not a positive
    finite number (nothing varies).
    """
    if not math.isfinite(stderr) or stderr <= 0.0:
        return math.nan
    stats = scipy_stats()
    quantile = stats.t(dof).ppf if math.isfinite(dof) and dof > 0 else stats.norm.ppf
    return float((quantile(0.5 + confidence / 2.0) + quantile(power)) * stderr)


def paired_t_power(effect: float, n: int, confidence: float = 0.95) -> float:
    """Power of a two-sided paired t-test with ``n`` pairs for ``effect = δ / sd_d``."""
    if n < 2:
        return math.nan
    t = scipy_stats().t
    nct = scipy_stats().nct
    dof = n - 1
    critical = float(t.ppf(0.5 + confidence / 2.0, dof))
    shift = effect * math.sqrt(n)
    return float(nct.sf(critical, dof, shift) + nct.cdf(-critical, dof, shift))


def samples_needed(
    difference: float,
    sd: float,
    *,
    confidence: float = 0.95,
    power: float = POWER,
    design_effect: float = 1.0,
) -> int:
    """The pairs a paired comparison needs to find ``difference`` with ``power``.

    Args:
        difference: The true difference ``B - A`` to be found (in score units).
        sd: Standard deviation of the per-pair differences ``b - a``.
        confidence: ``1 -`` the test's level.
        power: Chance of finding the difference when it is there.
        design_effect: With clusters, how many times fewer independent samples the
            pairs are worth (1: independent samples).

    Raises:
        InvalidInputError: A difference of 0, a non-positive sd, or levels out of (0, 1).
    """
    if not difference or not math.isfinite(difference):
        raise InvalidInputError(f"difference must be a non-zero number, not {difference!r}")
    if not math.isfinite(sd) or sd <= 0.0:
        raise InvalidInputError(
            f"the differences' standard deviation must be positive, not {sd!r}: a pilot "
            "whose runs never disagree says nothing about the spread"
        )
    for name, value in (("confidence", confidence), ("power", power)):
        if not 0.0 < value < 1.0:
            raise InvalidInputError(f"{name} must be between 0 and 1, not {value!r}")
    effect = abs(difference) / sd
    stats = scipy_stats()
    # The normal approximation is a lower bound; the t-test needs a few more pairs.
    z = float(stats.norm.ppf(0.5 + confidence / 2)) + float(stats.norm.ppf(power))
    n = max(2, math.ceil((z / effect) ** 2))
    while paired_t_power(effect, n, confidence) < power:
        n += 1
    return math.ceil(n * max(1.0, design_effect))


@dataclass(frozen=True)
class PowerPlan:
    """How many pairs a planned comparison needs, from a pilot's variance and pairing.

    Attributes:
        difference: The difference ``B - A`` to be found.
        n_pairs: Pairs needed.
        power: Chance of finding it.
        confidence: ``1 -`` the test's level.
        sd_a: Standard deviation of run A's scores in the pilot.
        sd_b: Of run B's.
        correlation: Pairing correlation of A's and B's scores in the pilot.
        sd_difference: Standard deviation of the per-pair differences.
        design_effect: With clusters, the pilot's variance inflation (else 1).
        pilot_pairs: Pairs in the pilot.
    """

    difference: float
    n_pairs: int
    power: float
    confidence: float
    sd_a: float
    sd_b: float
    correlation: float
    sd_difference: float
    design_effect: float
    pilot_pairs: int


def plan_from_pilot(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    difference: float,
    *,
    design_effect: float = 1.0,
    confidence: float = 0.95,
    power: float = POWER,
) -> PowerPlan:
    """The pairs needed to find ``difference``, from a pilot's paired scores.

    Raises:
        InvalidInputError: Fewer than 3 pilot pairs, or what `samples_needed` refuses.
    """
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    if x.size < 3:
        raise InvalidInputError(f"a pilot needs at least 3 pairs scored by both runs, not {x.size}")
    sd_a, sd_b = float(x.std(ddof=1)), float(y.std(ddof=1))
    sd_d = float((y - x).std(ddof=1))
    correlation = float(np.corrcoef(x, y)[0, 1]) if sd_a > 0.0 and sd_b > 0.0 else math.nan
    n = samples_needed(
        difference, sd_d, confidence=confidence, power=power, design_effect=design_effect
    )
    return PowerPlan(
        difference=difference,
        n_pairs=n,
        power=power,
        confidence=confidence,
        sd_a=sd_a,
        sd_b=sd_b,
        correlation=correlation,
        sd_difference=sd_d,
        design_effect=design_effect,
        pilot_pairs=int(x.size),
    )
