"""trl_reward: any grader as a reward function for TRL's GRPOTrainer and RLOOTrainer."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from gradewire import (
    BaseGrader,
    Grade,
    InvalidInputError,
    InvalidTypeError,
    RewardLogger,
    StringThread,
)
from gradewire.core._grader import timeout_setting
from gradewire.judges._certificate import gate_certificates
from gradewire.train import FailurePolicy
from gradewire.train._failure_policy import resolve_failure
from gradewire.train._gold import timed_attempts

__all__ = ["TrlReward", "trl_reward"]

# What TRL passes beside the dataset columns; none of it is sample data.
_TRAINER_KWARGS = frozenset({"trainer_state", "log_extra", "log_metric", "environments"})


def _thread(prompt: object, completion: object, metadata: Mapping[str, Any]) -> StringThread:
    """A thread from one TRL row: standard (strings) or conversational (message lists)."""
    if isinstance(prompt, str) and isinstance(completion, str):
        return StringThread([("user", prompt), ("assistant", completion)], metadata)
    if isinstance(prompt, list) and isinstance(completion, list):
        return StringThread.from_messages([*prompt, *completion], metadata)
    raise InvalidTypeError(
        f"a TRL row has a prompt of type {type(prompt).__name__} and a completion of type "
        f"{type(completion).__name__}; trl_reward takes strings (standard datasets) or "
        "message lists (conversational datasets)"
    )


class TrlReward:
    """A grader as a reward function for TRL's ``GRPOTrainer`` / ``RLOOTrainer``.

    Each completion becomes a `StringThread` (``[user prompt, assistant completion]`` for
    standard datasets, the messages for conversational ones) whose ``metadata`` holds that
    row's dataset columns (``answer``, ``documents``...), and the batch is graded
    concurrently (judges included). The function returns one float per completion and
    None where the grader abstained or failed: TRL then leaves this function out for that
    completion (a NaN in its logs), rather than training on an invented 0. Pass
    ``failure=FailurePolicy(failure_value=...)`` to give such completions a reward
    instead. Where TRL offers
    ``log_extra``, each grade's reasoning goes in its completions table as
    ``<name>/reasoning``.

    Fail fast: when at least ``max_error_rate`` of a grader's window of completions
    failed (`FailurePolicy`; by default every one of a batch, as a typo in a column name
    does, or of the last 64), the call raises
    `GraderFailingError` and training stops at that step, with the grader's first error
    chained and its traceback in the message. Abstentions are not failures.

    Without a `GradewireCallback` attached, nothing drains the grader's logs, so a grader
    with no ``max_log_records`` of its own keeps at most 10,000 records (figures stay
    exact; see `BaseGrader.max_log_records`) and warns once when it reaches them.

    TRL awaits it (its ``__call__`` is async) with the batch's prompts, completions,
    completion ids and dataset columns. Its ``__name__`` is the grader key, so TRL logs
    ``rewards/<grader_key>/mean``. Attributes: ``grader``, ``failure`` (the
    `FailurePolicy`), ``failure_value`` (its value), ``timeout``, ``fail_fast``.

    Args:
        grader: Any gradewire grader, sync or async work (sync functions run in worker
            threads, up to ``max_concurrency`` at once).
        name: The function's ``__name__``, which TRL uses in metric names (default: the
            grader key).
        max_concurrency: How many completions are graded at once.
        log_reasoning: Add the reasoning column to TRL's completions table.
        timeout: Seconds one completion's grade may take, when the grader sets no
            `timeout` of its own; a timed-out completion gets no reward and counts in
            ``score/timeout_count``. A call (a step's batch of n completions) then takes at
            most ``ceil(n / max_concurrency) * timeout``: a worker that waits on a judge
            that never answers holds its slot for ``timeout``, never longer.
        failure: What a completion with no grade gets, and the fail-fast bound
            (`FailurePolicy`; default ``FailurePolicy()``: None, masked by TRL).
        **deprecated: ``failure_value=``, ``max_error_rate=``, ``error_window=``: warn,
            and mean the `FailurePolicy` fields of the same names.

    Example:
        >>> reward = trl_reward(BaseGrader.from_function("exact", check))  # doctest: +SKIP
        >>> GRPOTrainer(model, reward_funcs=[reward], ...)  # doctest: +SKIP
    """

    def __init__(
        self,
        grader: BaseGrader,
        *,
        name: str | None = None,
        max_concurrency: int = 64,
        log_reasoning: bool = True,
        timeout: float | None = None,
        failure: FailurePolicy | None = None,
        **deprecated: Any,
    ) -> None:
        if not isinstance(grader, BaseGrader):
            raise InvalidTypeError(
                f"trl_reward takes a gradewire grader, not {type(grader).__name__}; wrap a "
                "function with BaseGrader.from_function(key, fn)"
            )
        self.failure = resolve_failure(failure, deprecated, where="trl_reward")
        if not isinstance(max_concurrency, int) or max_concurrency < 1:
            raise InvalidInputError(f"max_concurrency must be an int >= 1, not {max_concurrency!r}")
        self.grader = grader
        self.__name__ = name or grader.grader_key
        self.failure_value = self.failure.failure_value
        self.max_concurrency = max_concurrency
        self.log_reasoning = log_reasoning
        # Checked here, not at the first step: the same rule as a grader's own timeout.
        self.timeout = timeout_setting(timeout, "timeout")
        gate_certificates([grader], where="trl_reward")  # before spending
        self.fail_fast = self.failure.fail_fast("trl_reward(...)")
        self._logger: RewardLogger | None = None
        grader.bound_undrained(
            "Pass this reward function to GradewireCallback(...) to log and drain its "
            "statistics at the trainer's logging steps, or call get_logs(clear=True) on "
            "the grader yourself."
        )
        # Once a reasoning column was added to TRL's completions table it is added on every
        # call: TRL lines its columns up by position, so a gap would shift the rows.
        self._reasoning_column = False

    def attach(self, logger: RewardLogger) -> None:
        """Record every graded batch in ``logger`` (what `GradewireCallback` does)."""
        self._logger = logger

    def threads(
        self, prompts: Sequence[Any], completions: Sequence[Any], columns: Mapping[str, Any]
    ) -> list[StringThread]:
        """The threads of a TRL batch; ``columns`` are the dataset columns, one value a row."""
        if len(prompts) != len(completions):
            raise InvalidInputError(
                f"TRL passed {len(prompts)} prompts and {len(completions)} completions"
            )
        rows = [{name: values[i] for name, values in columns.items()} for i in range(len(prompts))]
        return [_thread(p, c, m) for p, c, m in zip(prompts, completions, rows, strict=True)]

    async def __call__(
        self,
        prompts: Sequence[Any],
        completions: Sequence[Any],
        completion_ids: Sequence[Sequence[int]] | None = None,
        **kwargs: Any,
    ) -> list[float | None]:
        """Grade the batch: one float per completion, `failure_value` where there is none."""
        columns = {k: v for k, v in kwargs.items() if k not in _TRAINER_KWARGS}
        samples = self.threads(prompts, completions, columns)
        if self._logger is None:
            outcomes = await self.grader._attempt_many(samples, self.max_concurrency, self.timeout)
        else:
            # The gold reference (when the callback has one) grades its share concurrently.
            (outcomes, seconds), gold = await asyncio.gather(
                timed_attempts(self.grader, samples, self.max_concurrency, self.timeout),
                self._logger.gold_grades(
                    samples, max_concurrency=self.max_concurrency, timeout=self.timeout
                ),
            )
            lengths = (
                None if completion_ids is None else [float(len(ids)) for ids in completion_ids]
            )
            self._logger.record(
                self.grader, samples, outcomes, lengths=lengths, gold=gold, latencies=seconds
            )
        grades = [o if isinstance(o, Grade) else None for o in outcomes]
        self.fail_fast.observe(self.grader.grader_key, outcomes)
        log_extra = kwargs.get("log_extra")
        if self.log_reasoning and callable(log_extra):
            self._add_reasoning(log_extra, grades)
        return [self.failure_value if g is None else g.value for g in grades]

    def _add_reasoning(self, log_extra: Any, grades: Sequence[Grade | None]) -> None:
        reasons = [None if g is None else g.reasoning for g in grades]
        if self._reasoning_column or any(r is not None for r in reasons):
            self._reasoning_column = True
            log_extra(f"{self.__name__}/reasoning", reasons)

    def __repr__(self) -> str:
        return f"trl_reward({self.grader!r}, name={self.__name__!r})"


trl_reward = TrlReward
"""The name TRL reward functions are made with: `TrlReward` itself, not a wrapper."""
