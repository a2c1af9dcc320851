"""scorer: any gradewire grader as an Inspect AI scorer."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from inspect_ai.scorer import Metric, Score, Scorer, Target, mean, stderr
from inspect_ai.scorer import scorer as inspect_scorer
from inspect_ai.solver import TaskState

from gradewire import (
    BaseGrader,
    Grade,
    GradingError,
    IgnoreGradeException,
    InvalidInputError,
    InvalidTypeError,
)
from gradewire_inspect._thread import state_thread

__all__ = ["ABSTAINED", "scorer"]

ABSTAINED = "abstained"
"""The `Score.reason` of a sample the grader abstained on (its value is Inspect's unscored NaN)."""


def _jsonable(value: Any) -> Any:
    # Inspect writes score metadata into its log as JSON: a grader's info may hold numpy
    # numbers or other objects, kept as their str rather than failing the log.
    return json.loads(json.dumps(value, default=str))


def scorer(
    grader: BaseGrader,
    *,
    target_key: str = "target",
    name: str | None = None,
    metrics: Sequence[Metric] | None = None,
) -> Scorer:
    """An Inspect scorer that grades each sample with ``grader``.

    The sample's messages become a `StringThread` (``completion()`` is the model's last
    message), its metadata the thread's metadata with the target under ``target_key``. A
    grade becomes a `Score` whose value is the grade's value, explanation its reasoning,
    answer the completion, and metadata ``{"grade": Grade.to_dict()}`` (the whole tree: a
    `CombinedGrader`'s sub-grades, a judge's info). A sample the grader abstains on is
    Inspect's unscored score (value NaN, reason ``"abstained"``): counted in the log's
    ``unscored_samples`` and left out of every metric. A sample the grader fails on raises,
    so Inspect records a sample error (and stops the eval unless ``fail_on_error`` allows
    errors): never a 0. Either way the grader logs the sample as always:
    ``grader.get_logs()`` after the eval has its statistics, errors and abstentions counted.

    Args:
        grader: Any gradewire grader: a function grader, a judge, a `CombinedGrader`.
        target_key: The metadata key the sample's target goes under.
        name: The scorer's name in the log (default: the grader key).
        metrics: Inspect metrics over the scores (default: ``mean()`` and ``stderr()``).

    Raises:
        InvalidTypeError: ``grader`` is not a gradewire grader.

    Example:
        >>> Task(dataset=..., solver=generate(), scorer=scorer(grader))  # doctest: +SKIP
    """
    if not isinstance(grader, BaseGrader):
        raise InvalidTypeError(
            f"scorer() takes a gradewire grader, not {type(grader).__name__}; wrap a "
            "function with BaseGrader.from_function(key, fn)"
        )
    if not isinstance(target_key, str) or not target_key:
        raise InvalidInputError(f"target_key must be a non-empty str, not {target_key!r}")
    key = name or grader.grader_key
    spec = getattr(grader, "spec", None)
    config = _jsonable(dict(spec)) if isinstance(spec, Mapping) else None
    graded = grader

    @inspect_scorer(metrics=list(metrics) if metrics is not None else [mean(), stderr()], name=key)
    def gradewire_scorer(
        grader: str, target_key: str, spec: dict[str, Any] | None = None
    ) -> Scorer:
        # The arguments are what Inspect records of the scorer in its log.
        return _score_with(graded, target_key)

    return gradewire_scorer(grader=grader.grader_key, target_key=target_key, spec=config)


def _score_with(grader: BaseGrader, target_key: str) -> Scorer:
    async def score(state: TaskState, target: Target) -> Score:
        thread = state_thread(state, target, target_key)
        # The attempt every driver shares: it logs the grade, abstention or error.
        outcome = await grader._attempt(thread)
        completion = thread.completion()
        if isinstance(outcome, Grade):
            return Score(
                value=outcome.value,
                answer=completion,
                explanation=outcome.reasoning,
                metadata={"grade": _jsonable(outcome.to_dict())},
            )
        if isinstance(outcome, IgnoreGradeException):
            return Score.unscored(
                reason=ABSTAINED,
                answer=completion,
                explanation=str(outcome),
            )
        raise GradingError(
            f"grader {grader.grader_key!r} failed on this sample "
            f"({type(outcome).__name__}: {outcome}); Inspect records it as a sample error"
        ) from outcome

    return score
