"""Planning a comparison from a pilot: the pairs each grader needs for a given difference.

Two pilot runs on the same samples (paired and checked as `compare_runs` pairs them)
give each grader's spread, pairing correlation and, with a cluster key, design effect;
`plan_from_pilot` turns them into the pairs a comparison needs to find the difference.
"""

from __future__ import annotations

import math

import numpy as np

from gradewire.eval.comparing._compare_runs import compare_runs
from gradewire.eval.comparing._power import POWER, PowerPlan, plan_from_pilot
from gradewire.eval.runs._eval_run import EvalRun

__all__ = ["plan_comparison"]


def plan_comparison(
    a: EvalRun,
    b: EvalRun,
    difference: float,
    *,
    cluster_key: str | None = None,
    confidence: float = 0.95,
    power: float = POWER,
) -> dict[str, PowerPlan]:
    """Per grader both pilot runs have, the pairs needed to find ``difference``.

    Args:
        a: The pilot's baseline run.
        b: The pilot's other run (a candidate like the one to be compared).
        difference: The difference ``B - A`` to find, in score units (0.03 is 3 points
            on a 0/1 grader).
        cluster_key: A metadata field grouping dependent samples: the pilot's design
            effect multiplies the pairs needed.
        confidence: ``1 -`` the level of the planned test.
        power: The chance of finding the difference when it is there.

    Raises:
        MismatchedRunsError: The pilot's runs do not pair (as `compare_runs` refuses).
        InvalidInputError: Too small a pilot, a pilot whose runs never disagree, or
            arguments out of range.
    """
    comparison = compare_runs(a, b, cluster_key=cluster_key, n_resamples=2, top=0)
    plans: dict[str, PowerPlan] = {}
    for result in comparison.graders:
        scores_a, scores_b = a.scores(result.grader), b.scores(result.grader)
        ids = [i for i in scores_a if i in scores_b]
        x = np.array([scores_a[i] for i in ids], dtype=np.float64)
        y = np.array([scores_b[i] for i in ids], dtype=np.float64)
        design_effect = 1.0
        if cluster_key is not None and x.size > 1:
            naive = float((y - x).std(ddof=1)) / math.sqrt(x.size)
            if naive > 0.0 and math.isfinite(result.stderr):
                design_effect = max(1.0, (result.stderr / naive) ** 2)
        plans[result.grader] = plan_from_pilot(
            x, y, difference, design_effect=design_effect, confidence=confidence, power=power
        )
    return plans
