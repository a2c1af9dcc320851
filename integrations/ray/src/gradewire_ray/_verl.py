"""verl_compute_score: any grader as veRL's ``custom_reward_function``, statistics included."""

from __future__ import annotations

import asyncio
import itertools
import math
import threading
from collections.abc import Callable, Coroutine, Mapping, Sequence
from concurrent.futures import Future
from typing import Any, ParamSpec

from gradewire import (
    BaseGrader,
    CombinedGrader,
    Grade,
    IgnoreGradeException,
    InvalidInputError,
    InvalidTypeError,
    StringThread,
)
from gradewire.core._grader import timeout_setting
from gradewire.core._histogram import DEFAULT_EDGES, check_edges
from gradewire.judges._certificate import gate_certificates
from gradewire.train import FailurePolicy, RewardLogger
from gradewire.train._failure_policy import resolve_failure
from gradewire.train._gold import check_gold, check_gold_fraction
from gradewire_ray._channel import DEFAULT_CHANNEL
from gradewire_ray._ray import import_ray, pickle, unpickle
from gradewire_ray._sender import WindowSender

__all__ = ["VAL_SPLITS", "VerlReward", "verl_compute_score"]

P = ParamSpec("P")

VAL_SPLITS = ("test", "val", "valid", "validation")
"""``extra_info["split"]`` values whose samples count as validation (``val-rewards/``)."""

# veRL needs a number for every sample: a failed one gets 0.0, flagged in ``error``.
VERL_FAILURE = FailurePolicy(failure_value=0.0)
_RESERVED = ("score", "reasoning", "error", "abstained", "error_message")
_ids = itertools.count()


class _LoopThread:
    """One event loop in a daemon thread, for the sync compute_score.

    veRL runs a sync reward function in a thread pool; the grader's logs must stay on one
    event loop, so every call grades there.
    """

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    def submit(self, coro: Coroutine[Any, Any, Any]) -> Future[Any]:
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                loop = asyncio.new_event_loop()
                threading.Thread(
                    target=loop.run_forever, name="gradewire-verl", daemon=True
                ).start()
                self._loop = loop
            return asyncio.run_coroutine_threadsafe(coro, self._loop)


class VerlReward:
    """A ``compute_score`` for veRL's ``reward.custom_reward_function``, from any grader.

    Put ``compute_score = verl_compute_score(grader)`` in the file the config's
    ``reward.custom_reward_function.path`` names. veRL (0.9.1) calls it once per sample
    in its reward-loop actors as ``compute_score(data_source=, solution_str=,
    ground_truth=, extra_info=, **reward_kwargs)``; the default is an ``async def``,
    which veRL awaits on the worker's loop, so a worker's samples grade concurrently.
    ``sync=True`` gives a plain function (for the ``remote`` reward manager, which takes
    sync functions only): it grades on one loop per process, whatever thread calls it.

    Every call returns a dict with the same keys, as veRL requires (it reads the keys of
    the first sample): ``score`` (the reward), ``error`` and ``abstained`` (1.0 or 0.0),
    ``reasoning``, ``error_message``, and for a `CombinedGrader` each sub-grader's value
    under its key (None where it has none). Where the grader fails, abstains or returns a
    non-finite score, ``score`` is the policy's ``failure_value`` and the flags say why:
    the reward is
    chosen, never a silent 0. veRL averages the numeric keys into its validation metrics
    and writes them all to its rollout dumps.

    Each sample's statistics go to the channel actor (`drain_reward_stats`, the veRL
    hook of `gradewire_ray.verl_plugin`) before the call returns, so a training step's
    figures are complete when the trainer logs it. Samples whose ``extra_info["split"]``
    is in ``val_splits`` are counted under ``val-rewards/``, the others under
    ``rewards/``. Pass ``channel=None`` to send nothing. (veRL's batch path,
    ``compute_rm_score``, pads a batch to a multiple of ``reward.num_workers`` with copies
    of its first samples and scores those too: they count in the statistics, so keep the
    batch a multiple of the workers. Its agent loop, the default, sends each sample once.)

    The object pickles as its settings and grader, so veRL's ``remote`` reward manager can
    ship the function to its own actors; each process then builds its own loggers and
    sender. `verl_compute_score` builds one and returns its `compute_score` function.

    Args:
        grader: Any gradewire grader (it is pickled into veRL's workers).
        sync: Return a sync function instead of an async one.
        label_key: The metadata key the ground truth goes under.
        prompt_key: The ``extra_info`` field that holds the prompt, if any.
        channel: The channel actor's name (None: no statistics sent).
        histogram_edges: Bin edges of the score histograms.
        val_splits: ``extra_info["split"]`` values that mark validation samples.
        timeout: Seconds one sample's grade may take, when the grader sets no `timeout`
            of its own (a timed-out sample scores ``failure_value``, flagged as an error).
        failure: The `FailurePolicy` (default ``FailurePolicy(failure_value=0.0)``: veRL
            needs a number, so a sample with no score gets 0.0 and ``error=1.0``). Fail
            fast: once at least ``max_error_rate`` of the last ``error_window`` samples of
            a worker failed (by default all of the last 64; veRL sends one a call), the
            call raises `GraderFailingError`, with the first error chained.
        gold: A trusted grader (a stronger judge, a held-out verifier) graded beside the
            reward on ``gold_fraction`` of the samples, concurrently and under the same
            timeout and fail-fast policy; its statistics (under its key) and the pairs
            (``<key>/health/gold/...``: both means and standard deviations, their
            correlation) go through the channel with the reward's. Needs a channel.
        gold_fraction: The share of samples the gold grades, picked by a hash of each
            sample (``extra_info`` ``id`` if set, else its conversation), so every worker
            and a restarted run pick the same ones.
        **deprecated: ``failure_score=``, ``max_error_rate=``, ``error_window=``: warn,
            and mean ``FailurePolicy(failure_value=..., max_error_rate=..., ...)``.
    """

    def __init__(
        self,
        grader: BaseGrader,
        *,
        sync: bool = False,
        label_key: str = "ground_truth",
        prompt_key: str = "question",
        channel: str | None = DEFAULT_CHANNEL,
        histogram_edges: Sequence[float] = DEFAULT_EDGES,
        val_splits: Sequence[str] = VAL_SPLITS,
        timeout: float | None = None,
        failure: FailurePolicy | None = None,
        gold: BaseGrader | None = None,
        gold_fraction: float = 0.25,
        **deprecated: Any,
    ) -> None:
        if not isinstance(grader, BaseGrader):
            raise InvalidTypeError(
                f"verl_compute_score takes a gradewire grader, not {type(grader).__name__}; "
                "wrap a function with BaseGrader.from_function(key, fn)"
            )
        self.failure = resolve_failure(
            failure, deprecated, where="verl_compute_score", default=VERL_FAILURE, stacklevel=4
        )
        if self.failure.failure_value is None:
            raise InvalidInputError(
                "veRL needs a number for every sample, and this FailurePolicy's failure_value "
                "is None: set one (e.g. FailurePolicy(failure_value=0.0)); a sample that "
                "gets it is flagged in the dict's error and abstained keys"
            )
        for name, value in (("label_key", label_key), ("prompt_key", prompt_key)):
            if not isinstance(value, str) or not value:
                raise InvalidInputError(f"{name} must be a non-empty str, not {value!r}")
        if channel is not None:
            import_ray("send reward statistics across veRL's Ray actors")
        self.grader = grader
        self.sync = bool(sync)
        self.failure_value: float = self.failure.failure_value
        self.label_key = label_key
        self.prompt_key = prompt_key
        self.channel = channel
        self.histogram_edges = check_edges(histogram_edges)
        self.val_splits = tuple(val_splits)
        self.sub_keys = _sub_keys(grader)
        self.timeout = timeout_setting(timeout, "timeout")
        self.fail_fast = self.failure.fail_fast("verl_compute_score(...)")
        self.gold = check_gold(gold, {grader.grader_key})
        if self.gold is not None and channel is None:
            raise InvalidInputError(
                "gold=... needs a channel: the gold's figures reach the tracker only "
                "through it (drain_reward_stats); pass channel=... or leave gold out"
            )
        self.gold_fraction = check_gold_fraction(gold_fraction)
        gate_certificates([grader, gold], where="verl_compute_score")  # before spending
        self._sender: WindowSender | None = None
        self._loop_thread = _LoopThread()

    def __reduce__(self) -> tuple[Any, ...]:
        # Fresh loggers, sender and loop in the process that unpickles it.
        return (_rebuild, (self.grader, self._settings()))

    def _settings(self) -> dict[str, Any]:
        return {
            "sync": self.sync,
            "label_key": self.label_key,
            "prompt_key": self.prompt_key,
            "channel": self.channel,
            "histogram_edges": self.histogram_edges,
            "val_splits": self.val_splits,
            "timeout": self.timeout,
            "failure": self.failure,
            "gold": self.gold,
            "gold_fraction": self.gold_fraction,
        }

    def compute_score(self) -> Callable[..., Any]:
        """The function veRL calls: ``async def`` unless ``sync``; ``.reward`` is this object."""
        if self.sync:

            def compute_score_sync(
                data_source: Any = None,
                solution_str: Any = "",
                ground_truth: Any = None,
                extra_info: Any = None,
                **reward_kwargs: Any,
            ) -> dict[str, Any]:
                return self.run_sync(
                    self.score(data_source, solution_str, ground_truth, extra_info)
                )

            compute_score_sync.reward = self  # type: ignore[attr-defined]
            return compute_score_sync

        async def compute_score(
            data_source: Any = None,
            solution_str: Any = "",
            ground_truth: Any = None,
            extra_info: Any = None,
            **reward_kwargs: Any,
        ) -> dict[str, Any]:
            return await self.score(data_source, solution_str, ground_truth, extra_info)

        compute_score.reward = self  # type: ignore[attr-defined]
        return compute_score

    def keys(self) -> list[str]:
        """The keys of every dict the function returns, in order (the same for each sample)."""
        return [*_RESERVED, *self.sub_keys]

    def thread(
        self, data_source: Any, solution_str: str, ground_truth: Any, extra_info: Mapping[str, Any]
    ) -> StringThread:
        """The sample as a thread: ``[user: extra_info[prompt_key], assistant: solution_str]``.

        veRL passes the decoded response only; the prompt is there when the data set put
        it in ``extra_info`` (veRL's data recipes use ``question``). The metadata holds
        ``extra_info``, ``data_source`` and the ground truth under ``label_key``.
        """
        prompt = extra_info.get(self.prompt_key)
        metadata = {**extra_info, "data_source": data_source, self.label_key: ground_truth}
        return StringThread(
            [("user", "" if prompt is None else str(prompt)), ("assistant", solution_str)],
            metadata,
        )

    def _logger(self, section: str) -> RewardLogger:
        sender = self._sender_for()
        reward_logger = sender.loggers.get(section)
        if reward_logger is None:
            # A grader of its own per section: the logger drains the grader's logs, and
            # training and validation figures must not take each other's records.
            first = not sender.loggers
            grader = self.grader if first else _copy(self.grader)
            gold = self.gold if first or self.gold is None else _copy(self.gold)
            reward_logger = RewardLogger(
                grader,
                prefix=None,
                histogram_edges=self.histogram_edges,
                failure=self.failure,
                gold=gold,
                gold_fraction=self.gold_fraction,
                monitor=False,  # drain_reward_stats logs the figures; no alerts out here
            )
            sender.loggers[section] = reward_logger
        return reward_logger

    def _sender_for(self) -> WindowSender:
        if self._sender is None:
            self._sender = WindowSender(self.channel or DEFAULT_CHANNEL)
        return self._sender

    async def score(
        self, data_source: Any, solution_str: Any, ground_truth: Any, extra_info: Any
    ) -> dict[str, Any]:
        """Grade one sample as veRL hands it over; send its statistics; the veRL dict."""
        info: Mapping[str, Any] = extra_info if isinstance(extra_info, Mapping) else {}
        thread = self.thread(data_source, str(solution_str), ground_truth, info)
        split = info.get("split")
        section = "val-rewards" if split in self.val_splits else "rewards"
        reward_logger = self._logger(section)
        grader = next(iter(reward_logger.graders.values()))
        gold = None
        if self.gold is None:
            outcome = await grader._attempt(thread, self.timeout)
        else:
            # The gold grades its share concurrently, under the same timeout.
            outcome, gold = await asyncio.gather(
                grader._attempt(thread, self.timeout),
                reward_logger.gold_grades([thread], max_concurrency=1, timeout=self.timeout),
            )
        grade = outcome if isinstance(outcome, Grade) else None
        index = info.get("index")
        # GRPO's completions of one prompt share the row's index in veRL's data recipes.
        group = f"{data_source}/{index}" if index is not None else f"sample-{next(_ids)}"
        if self.channel is not None:
            # Without a channel nothing would ever drain what the logger keeps per sample.
            reward_logger.record(grader, [thread], [grade], groups=[group], gold=gold)
            await self._sender_for().delivered()
        self.fail_fast.observe(grader.grader_key, [outcome])
        return self.answer(outcome)

    def answer(self, outcome: Grade | BaseException) -> dict[str, Any]:
        """The dict veRL gets: ``score``, flags, reasoning, error message, sub-scores."""
        out: dict[str, Any] = dict.fromkeys(self.keys())
        if isinstance(outcome, Grade) and math.isfinite(outcome.value):
            out.update(score=outcome.value, error=0.0, abstained=0.0, error_message="")
            out["reasoning"] = outcome.reasoning or ""
            children = {child.grader_key: child.value for child in outcome.children}
            for key in self.sub_keys:
                out[key] = children.get(key)
            return out
        abstained = isinstance(outcome, IgnoreGradeException)
        if isinstance(outcome, Grade):
            message = f"the grader returned a non-finite score ({outcome.value!r})"
        elif isinstance(outcome, IgnoreGradeException):
            message = f"abstained: {outcome.reason}"
        else:
            message = f"{type(outcome).__name__}: {outcome}"
        out.update(
            score=self.failure_value,
            error=0.0 if abstained else 1.0,
            abstained=1.0 if abstained else 0.0,
            error_message=message,
            reasoning="",
        )
        return out

    def run_sync(self, coro: Coroutine[Any, Any, dict[str, Any]]) -> dict[str, Any]:
        """Run a `score` call on this process's grading loop and wait for it."""
        result: dict[str, Any] = self._loop_thread.submit(coro).result()
        return result


def _rebuild(grader: BaseGrader, settings: dict[str, Any]) -> VerlReward:
    return VerlReward(grader, **settings)


def _copy(grader: BaseGrader) -> BaseGrader:
    copy: BaseGrader = unpickle(pickle(grader))
    copy.clear_logs()
    return copy


def _sub_keys(grader: BaseGrader) -> list[str]:
    keys = [g.grader_key for g in grader.graders] if isinstance(grader, CombinedGrader) else []
    clash = sorted(set(keys) & set(_RESERVED))
    if clash:
        raise InvalidInputError(
            f"sub-grader key(s) {clash} clash with the keys veRL gets ({', '.join(_RESERVED)}); "
            "rename the sub-grader"
        )
    return keys


def _compute_score_of(make: Callable[P, VerlReward]) -> Callable[P, Callable[..., Any]]:
    def verl_compute_score(*args: P.args, **kwargs: P.kwargs) -> Callable[..., Any]:
        return make(*args, **kwargs).compute_score()

    verl_compute_score.__doc__ = (
        "A ``compute_score`` for veRL's ``reward.custom_reward_function``: "
        "``VerlReward(...).compute_score()``, with `VerlReward`'s arguments."
    )
    verl_compute_score.__wrapped__ = make  # type: ignore[attr-defined]  # help() shows them
    return verl_compute_score


verl_compute_score = _compute_score_of(VerlReward)
"""``compute_score = verl_compute_score(grader, ...)``: `VerlReward`'s arguments, its function."""
