"""Weighted means and sums of grades that neither overflow nor round more than they must.

Weights are first divided by a power of two near the largest one. That division is exact,
so for ordinary weights every result is bit for bit what the plain formula gives, while
weights near the float maximum (``1e308``) no longer overflow their total to ``inf`` and
turn every combined value into 0.0. Sums use `math.fsum`, so a weighted mean of many grades
is correctly rounded. Where floats overflow on the way, the result is computed exactly with
`fractions.Fraction` (rare, and only then) and rounded once; one beyond the float range comes
back as +-inf for the caller to refuse, never as a plausible wrong number.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from fractions import Fraction

__all__ = ["normalised_weights", "penalty_weights", "weighted_mean", "weighted_sum"]


def _scaled(weights: Sequence[float]) -> list[float]:
    """The weights divided by the power of two that puts the largest in [1, 2): exactly."""
    largest = max((abs(w) for w in weights), default=0.0)
    if largest == 0.0:
        return [float(w) for w in weights]
    scale = math.ldexp(1.0, math.frexp(largest)[1] - 1)
    return [w / scale for w in weights]


def _fsum(terms: Sequence[float]) -> float:
    """`math.fsum`, or ``nan`` when a term or the running total leaves the float range."""
    try:
        return math.fsum(terms)
    except (OverflowError, ValueError):  # an intermediate overflow, or inf - inf
        return math.nan


def _exact(numerator: Fraction, denominator: Fraction = Fraction(1)) -> float:
    """A ratio of exact rationals, correctly rounded; +-inf when beyond the float range."""
    value = numerator / denominator
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def normalised_weights(weights: Sequence[float]) -> list[float]:
    """Non-negative weights divided by their total, which need not be representable.

    Returns the weights unchanged (all zero) when none is positive; callers refuse that.
    """
    scaled = _scaled(weights)
    total = math.fsum(scaled)
    if total <= 0.0:
        return [float(w) for w in weights]
    return [w / total for w in scaled]


def penalty_weights(weights: Sequence[float]) -> list[float]:
    """HUD's weights: the positive ones normalised to sum to 1, negative ones (penalties) kept."""
    positive = normalised_weights([w if w > 0 else 0.0 for w in weights])
    return [p if w > 0 else float(w) for p, w in zip(positive, weights, strict=True)]


def weighted_mean(values: Sequence[float], weights: Sequence[float]) -> float:
    """``sum(v * w) / sum(w)`` for non-negative weights with a positive total.

    Returns ``nan`` when no weight is positive. Where the float formula leaves the float
    range on the way (values near the float maximum), the mean is computed exactly with
    `fractions.Fraction` and rounded once.
    """
    scaled = _scaled(weights)
    total = math.fsum(scaled)
    if total <= 0.0:
        return math.nan
    mean = _fsum([v * w for v, w in zip(values, scaled, strict=True)]) / total
    if math.isfinite(mean):
        return mean
    numerator = sum(
        (Fraction(v) * Fraction(w) for v, w in zip(values, weights, strict=True)), Fraction(0)
    )
    return _exact(numerator, sum((Fraction(w) for w in weights), Fraction(0)))


def weighted_sum(values: Sequence[float], weights: Sequence[float]) -> float:
    """``sum(v * w)``, correctly rounded; ``inf`` (or ``-inf``) when it is beyond the range.

    Where a product or the running total overflows but the sum itself may not (huge
    weights), or a product falls below the normal floats and loses bits (weights near
    ``5e-324``), it is computed exactly with `fractions.Fraction` and rounded once.
    """
    products = [v * w for v, w in zip(values, weights, strict=True)]
    total = _fsum(products)
    if math.isfinite(total) and not any(
        abs(p) < sys.float_info.min and v != 0.0 and w != 0.0
        for p, v, w in zip(products, values, weights, strict=True)
    ):
        return total
    return _exact(
        sum((Fraction(v) * Fraction(w) for v, w in zip(values, weights, strict=True)), Fraction(0))
    )
