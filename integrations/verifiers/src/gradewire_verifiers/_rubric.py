"""Rubric: a verifiers Rubric whose reward functions are gradewire graders."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterable, Sequence
from typing import Any

import verifiers as vf

from gradewire import (
    BaseGrader,
    Grade,
    GradewireError,
    IgnoreGradeException,
    InvalidInputError,
    InvalidTypeError,
)
from gradewire.core import LogValue
from gradewire.train import FailurePolicy
from gradewire.train._failure_policy import resolve_failure
from gradewire_verifiers._thread import rollout_thread

__all__ = ["MASKED_METRIC", "RewardMasked", "Rubric"]

# verifiers needs a float for every rollout: a masked one gets 0.0, flagged.
_FAILURE = FailurePolicy(failure_value=0.0)

MASKED_METRIC = "reward_masked"
"""The metric set to 1.0 on a rollout whose reward is masked, else 0.0."""


class RewardMasked(vf.Error, GradewireError):  # type: ignore[misc]
    """Set as a rollout's ``error``: a weighted grader failed or abstained on it.

    Attributes:
        failures: ``{grader key: why}`` for each weighted grader that gave no grade.
    """

    def __init__(self, failures: dict[str, str]) -> None:
        listed = "; ".join(f"{key}: {why}" for key, why in failures.items())
        super().__init__(
            f"the reward is masked: {listed}. The rollout's reward is a placeholder "
            "(its FailurePolicy's failure_value) and its advantage 0; leave errored rollouts out"
        )
        self.failures = failures


class _RewardLog(BaseGrader):
    """The rubric's own log: one record per rollout (its reward, or why it was masked)."""

    async def grade(self, sample: Any) -> Grade:  # pragma: no cover - never graded
        raise NotImplementedError


def _weights(graders: Sequence[BaseGrader], weights: Sequence[float] | None) -> list[float]:
    if weights is None:
        return [1.0] * len(graders)
    if len(weights) != len(graders):
        raise InvalidInputError(
            f"{len(weights)} weights for {len(graders)} graders: give one weight per grader"
        )
    return [_weight(w) for w in weights]


def _weight(weight: object) -> float:
    if isinstance(weight, bool) or not isinstance(weight, (int, float)):
        raise InvalidTypeError(f"a weight must be a number, not {weight!r}")
    if not math.isfinite(weight):
        raise InvalidInputError(f"a weight must be finite, not {weight!r}")
    return float(weight)


class Rubric(vf.Rubric):  # type: ignore[misc]
    """A verifiers ``Rubric`` of gradewire graders, where a failed grade is masked, not 0.

    Each grader is a rubric function named by its key: its grade is the rollout's metric of
    that name, and ``weight * grade`` is summed into the reward, as verifiers does. A grader
    of weight 0 (`add_metric`) is logged only. Unlike verifiers' own functions (whose
    exceptions score 0.0), a grader that fails or abstains gives the metric NaN (so
    verifiers' ``avg_metrics`` for it is NaN, not a mean with invented zeros), and when its
    weight is not 0 the rollout's reward is masked: its ``error`` is a `RewardMasked` naming
    the grader (counted in ``avg_error``; a trainer that drops errored rollouts drops it),
    its metric ``reward_masked`` is 1.0 and its reward the policy's ``failure_value``, a
    placeholder (verifiers needs a float there: its pass@k compares it; pass
    ``FailurePolicy(failure_value=float("nan"))`` to make ``avg_reward`` refuse a mean over
    masked rollouts). Fail fast: once at least ``max_error_rate`` of a grader's last
    ``error_window`` rollouts failed (abstentions are not failures), scoring raises
    `GraderFailingError`. Group advantages are taken against
    the mean of the rollouts that were scored, a masked one's being 0.0. `get_logs` gives
    every grader's statistics (errors and abstentions counted) and the reward's over the
    rollouts that were not masked: the figures verifiers' summary cannot give.

    Args:
        graders: The reward graders.
        weights: One weight per grader (default 1.0 each).
        metrics: Graders logged as metrics only (weight 0).
        answer_key: The metadata key a rollout's ``answer`` goes under.
        failure: The `FailurePolicy` (default ``FailurePolicy(failure_value=0.0)``: a
            masked rollout's placeholder reward is 0.0; all of a grader's last 64 rollouts
            failing stops).
        max_concurrency: Grades in flight at once, over a group's rollouts and graders.
        parser: verifiers' parser (the environment's, as for any rubric).
        **deprecated: ``failure_reward=``: warns, and means
            ``FailurePolicy(failure_value=...)``.

    Example:
        >>> rubric = Rubric([correct, judge], [1.0, 0.5], metrics=[length])  # doctest: +SKIP
        >>> env = vf.SingleTurnEnv(dataset=data, rubric=rubric)  # doctest: +SKIP
    """

    def __init__(
        self,
        graders: Iterable[BaseGrader] = (),
        weights: Sequence[float] | None = None,
        *,
        metrics: Iterable[BaseGrader] = (),
        answer_key: str = "answer",
        max_concurrency: int = 64,
        parser: Any = None,
        failure: FailurePolicy | None = None,
        **deprecated: Any,
    ) -> None:
        graders = list(graders)
        self.graders: list[BaseGrader] = []
        super().__init__(funcs=[], weights=[], parser=parser)
        for grader, weight in zip(graders, _weights(graders, weights), strict=True):
            self.add_reward_func(grader, weight)
        for grader in metrics:
            self.add_metric(grader)
        if not isinstance(answer_key, str) or not answer_key:
            raise InvalidInputError(f"answer_key must be a non-empty str, not {answer_key!r}")
        if not isinstance(max_concurrency, int) or max_concurrency < 1:
            raise InvalidInputError(f"max_concurrency must be an int >= 1, not {max_concurrency!r}")
        self.answer_key = answer_key
        self.failure = resolve_failure(failure, deprecated, where="Rubric", default=_FAILURE)
        if self.failure.failure_value is None:
            raise InvalidInputError(
                "verifiers needs a float reward for every rollout, and this FailurePolicy's "
                "failure_value is None: set one (a masked rollout is flagged in "
                "reward_masked and its error), or float('nan')"
            )
        self.failure_value: float = self.failure.failure_value
        self.fail_fast = self.failure.fail_fast("Rubric(...)")
        self.max_concurrency = max_concurrency
        self._reward_log = _RewardLog("reward")

    def add_reward_func(self, func: Any, weight: float = 1.0) -> None:
        """Add a grader whose ``weight * grade`` is summed into the reward."""
        if not isinstance(func, BaseGrader):
            raise InvalidTypeError(
                f"a gradewire Rubric takes graders, not {type(func).__name__}; wrap a "
                "function of the sample with BaseGrader.from_function(key, fn)"
            )
        if func.grader_key in {g.grader_key for g in self.graders} | {MASKED_METRIC}:
            raise InvalidInputError(
                f"two rubric functions named {func.grader_key!r}: their metrics would "
                "overwrite each other; give the graders different keys"
            )
        self.graders.append(func)
        self.funcs.append(func)
        self.weights.append(_weight(weight))

    def add_metric(self, func: Any, weight: float = 0.0) -> None:
        """Add a grader logged as a metric (weight 0 unless given, as in verifiers)."""
        self.add_reward_func(func, weight)

    def _get_reward_func_names(self) -> list[str]:
        return [grader.grader_key for grader in self.graders]

    def _is_group_func(self, func: Any) -> bool:
        return False

    async def _score(self, states: Sequence[Any]) -> list[tuple[dict[str, float], bool]]:
        """Every grader on every state: (metrics, masked) per state."""
        slots = asyncio.Semaphore(self.max_concurrency)
        threads = [rollout_thread(self.score_objects(state), self.answer_key) for state in states]

        async def attempt(grader: BaseGrader, thread: Any) -> Any:
            async with slots:
                # The attempt every driver shares: it logs the grade, abstention or error.
                return await grader._attempt(thread)

        outcomes = await asyncio.gather(
            *(attempt(grader, thread) for thread in threads for grader in self.graders)
        )
        scored: list[tuple[dict[str, float], bool]] = []
        width = len(self.graders)
        for column, grader in enumerate(self.graders):
            self.fail_fast.observe(grader.grader_key, outcomes[column::width])
        for index, state in enumerate(states):
            row = outcomes[index * width : (index + 1) * width]
            metrics: dict[str, float] = {}
            failures: dict[str, str] = {}
            reward = 0.0
            for grader, weight, outcome in zip(self.graders, self.weights, row, strict=True):
                if isinstance(outcome, Grade):
                    metrics[grader.grader_key] = outcome.value
                    reward += weight * outcome.value
                    continue
                # NaN, not None: verifiers adds metrics up (RubricGroup) and averages them
                # (avg_metrics), and a NaN mean says "not a number" where a 0 would lie.
                metrics[grader.grader_key] = math.nan
                if weight != 0.0:
                    kind = "abstained" if isinstance(outcome, IgnoreGradeException) else "failed"
                    failures[grader.grader_key] = f"{kind} ({type(outcome).__name__}: {outcome})"
            masked = bool(failures)
            metrics[MASKED_METRIC] = 1.0 if masked else 0.0
            if masked:
                self._reward_log.add_log({"error": str(RewardMasked(failures))})
                if state.get("error") is None:
                    state["error"] = RewardMasked(failures)
                state["reward"] = self.failure_value
            else:
                self._reward_log.add_log({"score": reward})
                state["reward"] = reward
            state["metrics"] = metrics
            scored.append((metrics, masked))
        return scored

    async def score_rollout(self, state: Any) -> None:
        """Grade one rollout with every grader (verifiers calls this when not grouping)."""
        await self._score([state])

    async def score_group(self, states: list[Any]) -> None:
        """Grade a group; advantages against the mean of the rollouts that were scored."""
        if not states:
            return
        scored = await self._score(states)
        kept = [s["reward"] for s, (_, masked) in zip(states, scored, strict=True) if not masked]
        # verifiers' own rubrics set advantages this way (reward minus the group's mean);
        # a masked rollout is neither in the mean nor given a non-zero advantage.
        mean = sum(kept) / len(kept) if kept else 0.0
        for state, (_, masked) in zip(states, scored, strict=True):
            state["advantage"] = 0.0 if masked else state["reward"] - mean
            for step in state.get("trajectory", []):
                if step.get("advantage") is None:
                    step["advantage"] = state["advantage"]
                if step.get("reward") is None:
                    step["reward"] = state["reward"]

    def get_logs(self, clear: bool = False) -> dict[str, LogValue]:
        """Statistics per rubric function (``<key>/score/mean``, ``/error_count``, ...).

        ``reward/score/...`` are the rewards of the rollouts that were not masked, and
        ``reward/score/error_count`` the masked ones.
        """
        logs: dict[str, LogValue] = {}
        for grader in [*self.graders, self._reward_log]:
            for key, value in grader.get_logs(clear=clear).items():
                logs[f"{grader.grader_key}/{key}"] = value
        return logs
