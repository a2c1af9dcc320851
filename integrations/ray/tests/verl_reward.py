"""The reward file the veRL tests point ``reward.custom_reward_function.path`` at.

A combined grader (an exact answer check and a length check) that abstains on every
13th sample and fails on every 29th, as `compute_score` (async) and
`compute_score_sync`.
"""

from __future__ import annotations

import gradewire as gw
from gradewire.train import FailurePolicy
from gradewire_ray import verl_compute_score


def exact(sample: gw.StringThread) -> gw.Grade | None:
    index = int(sample.metadata["index"])
    if index % 13 == 0:
        return None
    if index % 29 == 0:
        raise ValueError(f"no verdict for sample {index}")
    right = (sample.completion() or "").strip() == str(sample.metadata["ground_truth"])
    return gw.Grade(1.0 if right else 0.0, "exact", reasoning=f"sample {index}")


def short(sample: gw.StringThread) -> float:
    return 1.0 / (1.0 + len(sample.completion() or ""))


def grader() -> gw.BaseGrader:
    """The grader the reward functions use (the tests recompute with a fresh one)."""
    return gw.CombinedGrader(
        "answer",
        [gw.BaseGrader.from_function("exact", exact), gw.BaseGrader.from_function("short", short)],
        weights=[0.8, 0.2],
        on_error="fail",  # a failing check fails the reward: the flags must show it
    )


compute_score = verl_compute_score(grader())
compute_score_sync = verl_compute_score(
    grader(), sync=True, failure=FailurePolicy(failure_value=-1.0)
)
