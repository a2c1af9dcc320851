"""openrlhf_reward_func: a grader as OpenRLHF's ``reward_func`` in a ``.py`` file."""

from __future__ import annotations

import asyncio
import logging
import math
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any

from gradewire.core import (
    BaseGrader,
    Grade,
    GraderFailingError,
    GradingError,
    IgnoreGradeException,
    InvalidInputError,
    InvalidTypeError,
    StringThread,
)
from gradewire.core._grader import timeout_setting
from gradewire.helpers._special_tokens import END_TOKENS, strip_end_tokens
from gradewire.judges._certificate import gate_certificates
from gradewire.train._failure_policy import FailurePolicy, resolve_failure
from gradewire.train._gold import check_gold, check_gold_fraction, in_gold_share

__all__ = ["OpenRLHFRewardFunc", "openrlhf_reward_func"]

logger = logging.getLogger("gradewire")

# OpenRLHF decodes the query with skip_special_tokens=False, so the response ends in the
# tokenizer's end marker; these are cut before grading.
DEFAULT_STOP_TEXTS = END_TOKENS


class _LoopThread:
    """One event loop in a daemon thread: every call's grading runs there.

    OpenRLHF calls ``reward_func`` from many threads at once; running all the grading on
    one loop keeps each grader's logs single-threaded and lets judge clients reuse their
    connections, while the calls still grade concurrently.
    """

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    def submit(self, coro: Any) -> Future[Any]:
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=loop.run_forever, name="gradewire-openrlhf", daemon=True
                )
                thread.start()
                self._loop = loop
            return asyncio.run_coroutine_threadsafe(coro, self._loop)


class OpenRLHFRewardFunc:
    """OpenRLHF's ``reward_func``, for its ``--reward.remote_url path/to/reward.py`` mode.

    Put ``reward_func = openrlhf_reward_func(grader, label_key="answer")`` at module
    level in the file. OpenRLHF (0.11.2) calls it once per sample, from a worker thread,
    as ``reward_func([query], [prompt], [label])``, where the query is the prompt plus the
    response, decoded with special tokens; the label comes from ``--data.label_key``.
    Each sample becomes ``[("user", prompt), ("assistant", response)]`` with the label in
    ``metadata[label_key]``. All calls grade on one background event loop, so they run
    concurrently and the grader's logs stay consistent.

    The reply is ``{"rewards": [...], "scores": [...], "extra_logs": {...}}``, one value
    per sample. OpenRLHF has no "no reward" for a sample: an exception in
    ``reward_func`` is logged at INFO and the sample's reward becomes None, which breaks
    the step later. So where the grader abstains or fails:

    - with ``failure_value=None`` (`FailurePolicy`'s default) the call raises `GradingError`, logged
      at ERROR here first: a failing grader stops the run instead of training on a
      reward nobody chose;
    - with a number, the sample gets that reward, and ``extra_logs`` flags it.

    ``extra_logs`` always holds, per sample, ``<key>/abstained_count`` and
    ``<key>/error_count`` (1.0 or 0.0; OpenRLHF logs their mean, the share of samples)
    and ``<key>/prompt_not_in_query``.

    Fail fast, for when ``failure_value`` lets failures through: once at least
    ``max_error_rate`` of the last ``error_window`` samples failed (by default, all of the
    last 64; OpenRLHF sends one sample a call, so the window is checked once full), every
    call raises `GraderFailingError` (logged at ERROR), with the grader's
    first error of the window chained and its traceback in the message. Abstentions are
    not failures. OpenRLHF reads only ``extra_logs``, so a grader with no
    ``max_log_records`` of its own keeps at most 10,000 log records.

    Args:
        grader: The grader.
        label_key: The metadata key the label goes under (e.g. ``"answer"``).
        stop_texts: Special tokens cut from the end of each response.
        max_concurrency: How many samples of one call are graded at once.
        timeout: Seconds one sample's grade may take, when the grader sets no `timeout`
            of its own (a timed-out sample is a failure, counted as a timeout).
        failure: What a sample with no grade gets, and the fail-fast bound
            (`FailurePolicy`; default ``FailurePolicy()``: such a sample raises, and all of
            the last 64 failing stops the run).
        gold: A trusted grader graded beside the reward on ``gold_fraction`` of the
            samples, concurrently and under the same timeout and fail-fast policy. Its
            statistics: ``reward_func.gold.get_logs(clear=True)``. Per sample,
            ``extra_logs`` gets ``<key>/gold_pair`` (1.0 where both graded), and, 0.0
            outside the pairs, ``<key>/gold_value`` and ``<key>/gold_gap`` (reward minus
            gold): OpenRLHF logs means over all samples, so the gold's mean over the pairs
            is ``train/<key>/gold_value / train/<key>/gold_pair``, and the mean gap
            likewise.
        gold_fraction: The share of samples the gold grades, picked by a hash of each
            sample (its ``metadata["id"]``, else its conversation): the same on every rank
            and in a restarted run.
        **deprecated: ``failure_reward=``, ``max_error_rate=``, ``error_window=``: warn,
            and mean ``FailurePolicy(failure_value=..., max_error_rate=..., ...)``.
    """

    def __init__(
        self,
        grader: BaseGrader,
        *,
        label_key: str = "label",
        stop_texts: Sequence[str] = DEFAULT_STOP_TEXTS,
        max_concurrency: int = 64,
        timeout: float | None = None,
        failure: FailurePolicy | None = None,
        gold: BaseGrader | None = None,
        gold_fraction: float = 0.25,
        **deprecated: Any,
    ) -> None:
        if not isinstance(grader, BaseGrader):
            raise InvalidTypeError(
                f"openrlhf_reward_func takes a gradewire grader, not {type(grader).__name__}"
            )
        if not isinstance(label_key, str) or not label_key:
            raise InvalidInputError(f"label_key must be a non-empty str, not {label_key!r}")
        self.failure = resolve_failure(failure, deprecated, where="openrlhf_reward_func")
        self.grader = grader
        self.label_key = label_key
        self.failure_value = self.failure.failure_value
        self.stop_texts = tuple(stop_texts)
        self.max_concurrency = max_concurrency
        self.timeout = timeout_setting(timeout, "timeout")
        self.fail_fast = self.failure.fail_fast("openrlhf_reward_func(...)")
        self.gold = check_gold(gold, {grader.grader_key})
        if self.gold is not None:
            self.gold.bound_undrained(
                "OpenRLHF logs only extra_logs; read the gold's full statistics with "
                "reward_func.gold.get_logs(clear=True) to drain them."
            )
        self.gold_fraction = check_gold_fraction(gold_fraction)
        gate_certificates([grader, gold], where="openrlhf_reward_func")  # before spending
        self._runner = _LoopThread()
        grader.bound_undrained(
            "OpenRLHF logs only extra_logs; read the grader's full statistics with "
            "reward_func.grader.get_logs(clear=True) to drain them."
        )

    def threads(
        self, queries: Sequence[str], prompts: Sequence[str], labels: Sequence[Any] | None
    ) -> tuple[list[StringThread], list[bool]]:
        """One thread per query (``[user prompt, assistant response]``, the label in metadata).

        The response is the query after its prompt (OpenRLHF sends prompt + response),
        with trailing special tokens cut; a query that does not start with its prompt is
        graded whole and flagged.
        """
        if labels is None:
            labels = [None] * len(queries)
        if not (len(queries) == len(prompts) == len(labels)):
            raise InvalidInputError(
                f"reward_func got {len(queries)} queries, {len(prompts)} prompts and "
                f"{len(labels)} labels; OpenRLHF sends one of each per sample"
            )
        samples: list[StringThread] = []
        outside: list[bool] = []
        for query, prompt, label in zip(queries, prompts, labels, strict=True):
            matches = query.startswith(prompt)
            response = query[len(prompt) :] if matches else query
            response = strip_end_tokens(response, self.stop_texts)
            metadata = {} if label is None else {self.label_key: label}
            samples.append(StringThread([("user", prompt), ("assistant", response)], metadata))
            outside.append(not matches)
        return samples, outside

    def __call__(
        self, queries: Sequence[str], prompts: Sequence[str], labels: Sequence[Any] | None = None
    ) -> dict[str, Any]:
        """Grade OpenRLHF's samples; returns ``{"rewards", "scores", "extra_logs"}``.

        Raises:
            GradingError: A sample got no grade and ``failure.failure_value`` is None.
            GraderFailingError: The window reached ``max_error_rate``.
        """
        samples, outside = self.threads(list(queries), list(prompts), labels)
        outcomes, gold = self._runner.submit(self._grade(samples)).result()
        return self.answer(outcomes, outside, gold)

    async def _grade(
        self, samples: list[StringThread]
    ) -> tuple[list[Grade | Exception], list[Grade | Exception | None] | None]:
        # On the grading loop, so the fail-fast window is kept by one thread, however many
        # threads OpenRLHF calls from.
        gold: list[Grade | Exception | None] | None = None
        gold_outcomes: list[Grade | Exception] = []
        if self.gold is None:
            outcomes = await self.grader._attempt_many(samples, self.max_concurrency, self.timeout)
        else:
            chosen = [i for i, s in enumerate(samples) if in_gold_share(s, self.gold_fraction)]
            # The gold grades its share concurrently, under the same timeout.
            outcomes, gold_outcomes = await asyncio.gather(
                self.grader._attempt_many(samples, self.max_concurrency, self.timeout),
                self.gold._attempt_many(
                    [samples[i] for i in chosen], self.max_concurrency, self.timeout
                ),
            )
            gold = [None] * len(samples)
            for i, outcome in zip(chosen, gold_outcomes, strict=True):
                gold[i] = outcome
        try:
            self.fail_fast.observe(self.grader.grader_key, outcomes)
            if self.gold is not None:
                self.fail_fast.observe(self.gold.grader_key, gold_outcomes)
        except GraderFailingError as exc:
            # OpenRLHF logs a reward_func exception only at INFO: say it louder here.
            logger.error("%s", exc)
            raise
        return outcomes, gold

    def answer(
        self,
        outcomes: Sequence[Grade | Exception],
        outside: Sequence[bool],
        gold: Sequence[Grade | Exception | None] | None = None,
    ) -> dict[str, Any]:
        """The reply for graded samples (see `openrlhf_reward_func`).

        ``gold``: the gold reference's outcome per sample (None outside its share).
        """
        key = self.grader.grader_key
        rewards: list[float] = []
        abstained: list[float] = []
        errors: list[float] = []
        for outcome in outcomes:
            if isinstance(outcome, Grade):
                rewards.append(outcome.value)
                abstained.append(0.0)
                errors.append(0.0)
                continue
            skipped = isinstance(outcome, IgnoreGradeException)
            if self.failure_value is None:
                what = "abstained" if skipped else f"failed ({type(outcome).__name__}: {outcome})"
                message = (
                    f"grader {key!r} {what} on a sample and its failure_value is None, so it "
                    "has no reward; pass failure=FailurePolicy(failure_value=...) to "
                    "openrlhf_reward_func to give such samples a reward (they stay counted "
                    "in extra_logs)"
                )
                # OpenRLHF logs a reward_func exception only at INFO: say it louder here.
                logger.error("%s", message)
                raise GradingError(message) from outcome
            rewards.append(self.failure_value)
            abstained.append(1.0 if skipped else 0.0)
            errors.append(0.0 if skipped else 1.0)
        extra_logs = {
            f"{key}/abstained_count": abstained,
            f"{key}/error_count": errors,
            f"{key}/prompt_not_in_query": [1.0 if o else 0.0 for o in outside],
        }
        if gold is not None:
            # OpenRLHF logs the mean of each list over every sample, so a figure that
            # exists only for the gold's pairs goes out as 0.0 elsewhere, beside the pairs'
            # indicator: the pairs' mean is the ratio of the two means.
            pairs = [
                isinstance(g, Grade)
                and isinstance(o, Grade)
                and math.isfinite(g.value)
                and math.isfinite(o.value)
                for o, g in zip(outcomes, gold, strict=True)
            ]
            extra_logs[f"{key}/gold_pair"] = [1.0 if p else 0.0 for p in pairs]
            extra_logs[f"{key}/gold_value"] = [
                g.value if p and isinstance(g, Grade) else 0.0
                for p, g in zip(pairs, gold, strict=True)
            ]
            extra_logs[f"{key}/gold_gap"] = [
                o.value - g.value if p and isinstance(o, Grade) and isinstance(g, Grade) else 0.0
                for p, o, g in zip(pairs, outcomes, gold, strict=True)
            ]
        return {"rewards": rewards, "scores": list(rewards), "extra_logs": extra_logs}


openrlhf_reward_func = OpenRLHFRewardFunc
"""The name OpenRLHF's reward files use: `OpenRLHFRewardFunc` itself, not a wrapper."""
