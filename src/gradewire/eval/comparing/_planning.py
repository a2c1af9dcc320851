"""Planning a comparison from a pilot: the pairs each grader needs for a given difference.

Two pilot runs on the same samples (paired and checked as `compare_runs` pairs them)
give each grader's spread, pairing correlation and, with a cluster key, design effect;
`plan_from_pilot` turns them into the pairs a comparison needs to find the difference.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from gradewire.core import InvalidInputError
from gradewire.eval.comparing._compare_runs import compare_runs
from gradewire.eval.comparing._power import POWER, PowerPlan, plan_from_pilot
from gradewire.eval.runs._eval_run import EvalRun

__all__ = ["plan_comparison"]


def plan_comparison(
    a: EvalRun,
    b: EvalRun,
    difference: float,
    *,
    graders: Sequence[str] | None = None,
    cluster_key: str | None = None,
    confidence: float = 0.95,
    power: float = POWER,
) -> tuple[dict[str, PowerPlan], dict[str, str]]:
    """Per grader both pilot runs have, the pairs needed to find ``difference``.

    Each grader is planned on its own: one the pilot cannot plan (too few pairs it scored
    in both runs, or runs that never disagree on it) is named with the reason, and the
    others are planned all the same.

    Args:
        a: The pilot's baseline run.
        b: The pilot's other run (a candidate like the one to be compared).
        difference: The difference ``B - A`` to find, in score units (0.03 is 3 points
            on a 0/1 grader).
        graders: Plan only these graders (None: every grader both runs have).
        cluster_key: A metadata field grouping dependent samples: the pilot's design
            effect multiplies the pairs needed.
        confidence: ``1 -`` the level of the planned test.
        power: The chance of finding the difference when it is there.

    Returns:
        The plans by grader, and by grader why one could not be planned.

    Raises:
        MismatchedRunsError: The pilot's runs do not pair (as `compare_runs` refuses).
        InvalidInputError: A grader in ``graders`` that the runs do not both have, or
            arguments out of range.
    """
    _check(difference, confidence, power)
    comparison = compare_runs(a, b, cluster_key=cluster_key, n_resamples=2, top=0)
    found = [result.grader for result in comparison.graders]
    if graders is not None:
        unknown = [g for g in graders if g not in found]
        if unknown:
            raise InvalidInputError(
                f"the pilot's runs do not both have the grader(s) {', '.join(map(repr, unknown))}; "
                f"they have: {', '.join(map(repr, found)) or 'none in common'}"
            )
    plans: dict[str, PowerPlan] = {}
    refused: dict[str, str] = {}
    for result in comparison.graders:
        if graders is not None and result.grader not in graders:
            continue
        scores_a, scores_b = a.scores(result.grader), b.scores(result.grader)
        ids = [i for i in scores_a if i in scores_b]
        x = np.array([scores_a[i] for i in ids], dtype=np.float64)
        y = np.array([scores_b[i] for i in ids], dtype=np.float64)
        design_effect = 1.0
        if cluster_key is not None and x.size > 1:
            naive = float((y - x).std(ddof=1)) / math.sqrt(x.size)
            if naive > 0.0 and math.isfinite(result.stderr):
                design_effect = max(1.0, (result.stderr / naive) ** 2)
        try:
            plans[result.grader] = plan_from_pilot(
                x, y, difference, design_effect=design_effect, confidence=confidence, power=power
            )
        except InvalidInputError as exc:
            refused[result.grader] = str(exc)
    return plans, refused


def _check(difference: float, confidence: float, power: float) -> None:
    """Refuse arguments that no grader could be planned with, before any grader."""
    if isinstance(difference, bool) or not isinstance(difference, int | float):
        raise InvalidInputError(f"difference must be a number, not {difference!r}")
    if not difference or not math.isfinite(difference):
        raise InvalidInputError(f"difference must be a non-zero number, not {difference!r}")
    for name, value in (("confidence", confidence), ("power", power)):
        if not 0.0 < value < 1.0:
            raise InvalidInputError(f"{name} must be between 0 and 1, not {value!r}")
