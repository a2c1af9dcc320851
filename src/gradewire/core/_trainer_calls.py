"""What a grader says when it is called as a trainer calls a reward function.

A grader takes one `StringThread`. Handed to a trainer directly (``GRPOTrainer(reward_funcs=
[grader])``), it is called with the trainer's own arguments; Python's "unexpected keyword
argument 'prompts'" does not say that an adapter exists, so the call is recognised by the
trainer's argument names and the error names the adapter to wrap the grader in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gradewire.core._errors import InvalidTypeError

__all__ = ["wrong_call"]

# What TRL's GRPOTrainer / RLOOTrainer pass every reward function (trl 1.16), beside the
# data set's own columns.
_TRL = frozenset(
    {
        "prompts",
        "completions",
        "completion_ids",
        "trainer_state",
        "log_extra",
        "log_metric",
        "environments",
    }
)
# What veRL passes its compute_score (0.9).
_VERL = frozenset({"data_source", "solution_str", "ground_truth", "extra_info"})


def wrong_call(
    grader: Any, extra: Sequence[object], keywords: Mapping[str, object]
) -> InvalidTypeError:
    """The error for a call of ``grader`` with ``extra`` positional and ``keywords`` arguments."""
    key = getattr(grader, "grader_key", type(grader).__name__)
    names = sorted(keywords)
    shown = ", ".join(f"{name}=" for name in names[:4]) + (", ..." if len(names) > 4 else "")
    if _TRL.intersection(names):
        return InvalidTypeError(
            f"grader {key!r} was called as a TRL reward function ({shown}), but a grader "
            "grades one StringThread; wrap it for TRL: "
            "`from gradewire_transformers import trl_reward` and pass "
            "reward_funcs=[trl_reward(grader)], which turns TRL's prompts, completions and "
            "dataset columns into threads (pip install 'gradewire[trl]')"
        )
    if _VERL.intersection(names):
        return InvalidTypeError(
            f"grader {key!r} was called as veRL's compute_score ({shown}), but a grader "
            "grades one StringThread; in the reward file write "
            "`compute_score = verl_compute_score(grader)` "
            "(`from gradewire_ray import verl_compute_score`, pip install 'gradewire[ray]')"
        )
    if len(extra) == 2:
        return InvalidTypeError(
            f"grader {key!r} was called with three lists, as OpenRLHF calls its reward_func "
            "(queries, prompts, labels), but a grader grades one StringThread; in the reward "
            "file write `reward_func = gradewire.openrlhf_reward_func(grader, "
            "label_key=...)`"
        )
    if keywords:
        return InvalidTypeError(
            f"grader {key!r} got unexpected keyword argument(s) {shown}; call it with one "
            "sample: `await grader(StringThread(...))`, or a batch: `await "
            "grader.grade_many(samples)`"
        )
    return InvalidTypeError(
        f"grader {key!r} takes one StringThread sample, not {1 + len(extra)} argument(s) "
        "or none; call `await grader(sample)`, or `await grader.grade_many(samples)` for a "
        "batch"
    )
