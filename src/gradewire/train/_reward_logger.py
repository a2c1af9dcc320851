"""RewardLogger: grader statistics for a training loop, one call per step."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from gradewire.core import (
    BaseGrader,
    Grade,
    InvalidInputError,
    InvalidTypeError,
    LogState,
    LogValue,
    StringThread,
    Table,
)
from gradewire.core._batch import thread_batch
from gradewire.core._histogram import DEFAULT_EDGES, check_edges
from gradewire.judges._certificate import gate_certificates
from gradewire.sinks import FanOutSink, Sink
from gradewire.train._distributed import distributed_rank, merge_windows
from gradewire.train._failure_policy import FailurePolicy, resolve_failure
from gradewire.train._gold import (
    check_gold,
    check_gold_fraction,
    in_gold_share,
    sample_identity,
    timed_attempts,
)
from gradewire.train._monitor import Alert, RewardHealthError, RewardMonitor, check_on_alert
from gradewire.train._samples import SampleRecorder
from gradewire.train._window import StepWindow

__all__ = ["RewardLogger"]

logger = logging.getLogger("gradewire")

Edges = Sequence[float] | Mapping[str, Sequence[float]]


class RewardLogger:
    """Drains graders' logs at each training step, adds the figures RL needs, and logs them.

    A training loop needs three calls: grade through the logger, `step()` at each step,
    `close()` at the end::

        reward_logger = RewardLogger(grader, sinks=JsonlSink("runs/rl.jsonl"))
        grades = await reward_logger.grade(samples)   # once or more per step
        reward_logger.step(step)
        reward_logger.close()

    What `step()` logs, every key under ``prefix`` (default ``rewards/<grader_key>/``):

    - each grader's own `get_logs()` statistics: ``score/mean``, ``/std``, ``/min``,
      ``/max``, ``/count``, ``score/abstained_count``, ``score/error_count`` (and those of
      a CombinedGrader's sub-graders under ``<sub_key>/``), exact over the window;
    - ``score/histogram``: a `Histogram` of the values over fixed bin edges (so histograms
      from several ranks add up exactly); values outside the edges in
      ``score/outside_edges_count``;
    - ``score/zero_spread_frac`` and ``score/groups``: the share of groups (samples that
      share a prompt, as GRPO's completions of one prompt) whose rewards have no spread,
      counted over groups with at least two scored samples: such groups give GRPO no
      learning signal;
    - ``score/length_corr``: Pearson's correlation of the reward with the completion
      length (a reward-hacking signal), when defined; ``score/length_corr_undefined`` is
      1.0 when the window had scored samples but no correlation (every completion one
      length, or every reward the same: no correlation exists) and 0.0 when it has one;
    - for a `CombinedGrader`: ``total/weighted/...`` (its own value, with its weights) and
      ``total/unweighted/...`` (the same sub-grades, every weight 1).
    - reward health, under ``<key>/health/``: ``length_mean`` and ``length_std``; with a
      ``gold`` grader, the pairs graded by both (``gold/pairs``, ``gold/proxy_mean``,
      ``gold/gold_mean``, ``gold/proxy_std``, ``gold/gold_std``, ``gold/corr``,
      ``gold/corr_undefined``: 1.0 when no correlation exists), while the
      gold's own statistics go under its key; for a `CombinedGrader`,
      ``dominance/<sub_key>``, each part's share of the total's variance; for batches
      graded through `grade`, ``latency_p50``, ``latency_p99`` (seconds, read from fixed
      log-spaced bins: approximate within about 7.5%) and ``latency_count``. All but the
      latency quantiles merge exactly across ranks;
    - with the monitor on (the default), its signals (``gold_gap``, ``gold_gap_trend``,
      ``gold_lag_z``, ``length_drift``, ``unscored_rate``, ``error_rate``,
      ``timeout_rate``) and ``health/alerts`` (alerts raised at this step) and
      ``health/alerts_total``; see `RewardMonitor` for the rules. Each alert also
      marks the run on sinks that can (`BaseSink.alert`: MLflow tags; W&B summary
      fields, a ``gradewire-alert`` label and a W&B alert): the tags
      ``gradewire/health/alert_count`` (the run's count so far) and
      ``<prefix>/<grader>/health/alert/<signal>``, whose value is ``"step N: <what to
      do>"``.

    Groups and lengths come from the samples graded through `grade` (or passed to
    `record`): a sample's group is ``metadata["group"]`` when set, else its conversation
    before the last assistant turn; its length is ``metadata["completion_length"]`` when
    set (trainer adapters put the token count there), else the completion's characters.
    The grader statistics cover everything the graders logged, however they were called;
    histograms and the derived figures cover the samples the logger saw.

    Under ``torch.distributed`` (when a process group is initialised) `step()` merges
    every rank's window first, so the figures cover all ranks exactly, and only rank 0
    writes to the sinks; every rank must call `step()` equally often. Tables show the
    samples of rank 0.

    With no sinks, `step()` just returns the dict, for trainers that log it themselves.

    Fail fast: every batch graded through `grade` or passed to `record` is checked against
    ``failure.max_error_rate``; when that share of a window's samples failed (by default:
    every sample of a batch, or of the last 64 samples), `GraderFailingError` stops the
    training loop, with the grader's
    first error chained and its traceback in the message. Abstentions are not failures.
    A grader with no `max_log_records` of its own keeps at most 10,000 records between
    two steps (figures stay exact; see `BaseGrader.max_log_records`).
    """

    def __init__(
        self,
        graders: BaseGrader | Sequence[BaseGrader],
        sinks: Sink | Sequence[Sink] = (),
        *,
        prefix: str | None = "rewards",
        histogram_edges: Edges | None = None,
        table_every: int = 1,
        failure: FailurePolicy | None = None,
        gold: BaseGrader | None = None,
        gold_fraction: float = 0.25,
        monitor: RewardMonitor | bool = True,
        on_alert: Literal["warn", "raise"] = "warn",
        **deprecated: Any,
    ) -> None:
        """Set up the logger.

        Args:
            graders: The graders to drain; each needs a distinct grader key.
            sinks: Where `step()` writes; none: `step()` only returns the dict.
            prefix: The section every key goes under (None: no prefix).
            histogram_edges: The bin edges of every histogram, or a mapping from grader
                path (``"correct"``, ``"combo/format"``) to edges, with ``"*"`` for the
                rest (default: 20 bins over [0, 1]).
            table_every: Add the graders' sample tables at steps that are multiples of
                this (tables are large; numbers are logged at every step).
            failure: The fail-fast bound (`FailurePolicy`: ``max_error_rate``,
                ``error_window``; default ``FailurePolicy()``). The logger returns None for
                a sample with no grade, whatever the policy's ``failure_value``.
            **deprecated: ``max_error_rate=``, ``error_window=``: warn, and mean the
                `FailurePolicy` fields of the same names.
            gold: A trusted grader (a stronger judge, a held-out verifier) graded beside
                the training reward on a share of the samples; its own statistics are
                logged under its key, and the pairs under ``<key>/health/gold/...``.
            gold_fraction: The share of samples the gold grades, picked by a hash of each
                sample's identity (``metadata["id"]``, else its conversation), so every
                rank and a restarted run pick the same ones.
            monitor: The `RewardMonitor` that turns each step's figures into alerts
                (True: one with its defaults; False: none, no health signals).
            on_alert: ``"warn"``: log each alert as a warning and train on; ``"raise"``:
                `step()` raises `RewardHealthError` after logging the step.
        """
        chosen = [graders] if isinstance(graders, BaseGrader) else list(graders)
        if not chosen:
            raise InvalidInputError("RewardLogger needs at least one grader")
        self.graders: dict[str, BaseGrader] = {}
        for grader in chosen:
            if not isinstance(grader, BaseGrader):
                raise InvalidTypeError(
                    f"RewardLogger takes graders, not {type(grader).__name__}; wrap a function "
                    "with BaseGrader.from_function(key, fn)"
                )
            if grader.grader_key in self.graders:
                raise InvalidInputError(
                    f"two graders share the key {grader.grader_key!r}; give each its own key"
                )
            self.graders[grader.grader_key] = grader
        self._sinks = _one_sink(sinks)
        if prefix is not None and (not isinstance(prefix, str) or not prefix.strip("/")):
            raise InvalidInputError(f"prefix must be a non-empty str or None, not {prefix!r}")
        self.prefix = None if prefix is None else prefix.strip("/")
        self._edges = _edge_lookup(DEFAULT_EDGES if histogram_edges is None else histogram_edges)
        if isinstance(table_every, bool) or not isinstance(table_every, int) or table_every < 1:
            raise InvalidInputError(f"table_every must be an int >= 1, not {table_every!r}")
        self.table_every = table_every
        self._samples = SampleRecorder(self._edges)
        self.failure = resolve_failure(failure, deprecated, where="RewardLogger")
        self.fail_fast = self.failure.fail_fast("RewardLogger(...)")
        self.gold = check_gold(gold, self.graders)
        self.gold_fraction = check_gold_fraction(gold_fraction)
        gate_certificates([*chosen, gold], where="RewardLogger")  # before spending
        if isinstance(monitor, bool):
            self.monitor: RewardMonitor | None = RewardMonitor() if monitor else None
        elif isinstance(monitor, RewardMonitor):
            self.monitor = monitor
        else:
            raise InvalidTypeError(
                f"monitor must be a RewardMonitor or a bool, not {type(monitor).__name__}"
            )
        self.on_alert = check_on_alert(on_alert)
        self._gold_cache: dict[str, Grade | Exception] = {}
        for grader in self._drained():
            grader.bound_undrained("Call step() at each training step to drain it.")
        self._closed = False

    def _drained(self) -> list[BaseGrader]:
        return [*self.graders.values(), *([] if self.gold is None else [self.gold])]

    @property
    def alerts(self) -> list[Alert]:
        """Every alert the monitor raised so far ([] without a monitor)."""
        return [] if self.monitor is None else list(self.monitor.alerts)

    async def gold_grades(
        self,
        samples: Sequence[StringThread],
        *,
        max_concurrency: int = 64,
        timeout: float | None = None,
    ) -> list[Grade | Exception | None] | None:
        """The gold reference's grades of the samples in its share (None for the others).

        None without a gold grader. A sample graded already since the last step (by
        another reward function of the same trainer) is not graded again. Failures of
        the gold count against ``max_error_rate`` under the gold's key.
        """
        if self.gold is None:
            return None
        batch = thread_batch(samples)
        names = [sample_identity(s) for s in batch]
        chosen = [i for i, s in enumerate(batch) if in_gold_share(s, self.gold_fraction)]
        todo = [i for i in chosen if names[i] not in self._gold_cache]
        outcomes, seconds = await timed_attempts(
            self.gold, [batch[i] for i in todo], max_concurrency, timeout
        )
        for i, outcome in zip(todo, outcomes, strict=True):
            self._gold_cache[names[i]] = outcome
        if todo:
            self._samples.record(
                self.gold,
                [batch[i] for i in todo],
                [o if isinstance(o, Grade) else None for o in outcomes],
                latencies=seconds,
            )
            self.fail_fast.observe(self.gold.grader_key, outcomes)
        result: list[Grade | Exception | None] = [None] * len(batch)
        for i in chosen:
            result[i] = self._gold_cache.get(names[i])
        return result

    async def grade(
        self,
        samples: Sequence[StringThread],
        *,
        grader: str | None = None,
        groups: Sequence[str] | None = None,
        lengths: Sequence[float] | None = None,
        max_concurrency: int = 64,
        timeout: float | None = None,
    ) -> list[Grade | None]:
        """Grade a batch with one grader (the only one, or the one named) and record it.

        Args:
            samples: The completions to grade, as threads.
            grader: The key of the grader to use, when the logger holds several.
            groups: One group key per sample (default: see the class docs).
            lengths: One completion length per sample (default: see the class docs).
            max_concurrency: How many samples are graded at once.
            timeout: Seconds one grade may take, for a grader that sets no `timeout` of
                its own (a timed-out sample counts in ``score/timeout_count``).

        Returns:
            One Grade per sample, None where the grader abstained, failed or timed out.

        Raises:
            GraderFailingError: The batch reaches ``max_error_rate`` (see the class docs).
        """
        chosen = self._pick(grader)
        batch = thread_batch(samples)
        (outcomes, seconds), gold = await asyncio.gather(
            timed_attempts(chosen, batch, max_concurrency, timeout),
            self.gold_grades(batch, max_concurrency=max_concurrency, timeout=timeout),
        )
        self.record(
            chosen, batch, outcomes, groups=groups, lengths=lengths, gold=gold, latencies=seconds
        )
        return [o if isinstance(o, Grade) else None for o in outcomes]

    def record(
        self,
        grader: str | BaseGrader,
        samples: Sequence[StringThread],
        grades: Sequence[Grade | BaseException | None],
        *,
        groups: Sequence[str] | None = None,
        lengths: Sequence[float] | None = None,
        gold: Sequence[Grade | BaseException | None] | None = None,
        latencies: Sequence[float] | None = None,
    ) -> None:
        """Record grades made elsewhere for the next step, and check the fail-fast bound.

        Args:
            grader: The grader (or its key) that graded them.
            samples: The samples.
            grades: One per sample: the `Grade`, or the exception that kept it from one
                (an `IgnoreGradeException` for an abstention), or None when that is not
                known (then it counts as neither a failure nor a grade).
            groups: One group key per sample (default: see the class docs).
            lengths: One completion length per sample (default: see the class docs).
            gold: The gold reference's grade of each sample (`gold_grades`), None where
                there is none; the pairs make the ``health/gold/...`` figures.
            latencies: The seconds each grade took (``health/latency_p50``, ``_p99``).

        Raises:
            GraderFailingError: The batch reaches ``max_error_rate`` (see the class docs).
        """
        chosen = self._pick(grader.grader_key if isinstance(grader, BaseGrader) else grader)
        outcomes = list(grades)
        values = [g if isinstance(g, Grade) else None for g in outcomes]
        checks = None if gold is None else [g if isinstance(g, Grade) else None for g in gold]
        self._samples.record(
            chosen,
            list(samples),
            values,
            groups=groups,
            lengths=lengths,
            gold=checks,
            latencies=latencies,
        )
        self.fail_fast.observe(chosen.grader_key, outcomes)

    def _pick(self, key: str | None) -> BaseGrader:
        if key is None:
            if len(self.graders) == 1:
                return next(iter(self.graders.values()))
            raise InvalidInputError(
                f"this logger holds {len(self.graders)} graders ({', '.join(self.graders)}); "
                "name one with grader=..."
            )
        try:
            return self.graders[key]
        except KeyError:
            raise InvalidInputError(
                f"no grader {key!r} in this logger; it holds: {', '.join(self.graders)}"
            ) from None

    def collect(self) -> StepWindow:
        """Drain every grader and the recorded samples into one window, merged across ranks.

        A collective call under torch.distributed. `step()` calls it; trainer adapters
        call it to log the window themselves.
        """
        states = [g.log_state(clear=True).prefixed(g.grader_key) for g in self._drained()]
        totals, series, health = self._samples.drain()
        self._gold_cache = {}
        window = StepWindow(LogState.merge_all([*states, totals]), series, health)
        return merge_windows(window)

    def tables(self, step: int) -> dict[str, LogValue]:
        """The graders' sample tables, when ``step`` is a table step (call before collecting)."""
        if step % self.table_every:
            return {}
        tables: dict[str, LogValue] = {}
        for key, grader in self.graders.items():
            if not grader.sample_tables:
                continue
            for name, value in grader.get_logs(clear=False).items():
                if isinstance(value, Table):
                    tables[self._key(f"{key}/{name}")] = value
        return tables

    def _key(self, key: str) -> str:
        return key if self.prefix is None else f"{self.prefix}/{key}"

    def step(self, step: int) -> dict[str, LogValue]:
        """Log everything since the last step at ``step`` and return it.

        Returns the same dict on every rank ({} when nothing was logged anywhere); only
        rank 0 writes it to the sinks.
        """
        if self._closed:
            raise InvalidInputError("this RewardLogger is closed; create a new one")
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise InvalidInputError(f"step must be an int >= 0, not {step!r}")
        tables = self.tables(step) if distributed_rank() == 0 else {}
        window = self.collect()
        if window.empty:
            return {}
        logs = window.to_logs(self.prefix)
        raised = self.watch(step, logs)
        logs.update(tables)
        if self._sinks is not None and distributed_rank() == 0:
            self._sinks.log(logs, step)
            self.mark(raised)
        self.act(raised)
        return logs

    def watch(self, step: int, logs: dict[str, LogValue]) -> list[Alert]:
        """Run the monitor on a step's logs, adding its signals and alert count to them.

        Every rank holds the same merged logs, so every rank raises the same alerts.
        """
        if self.monitor is None:
            return []
        raised = self.monitor.observe(step, logs)
        logs.update(self.monitor.signals)
        logs[self._key("health/alerts")] = len(raised)
        logs[self._key("health/alerts_total")] = len(self.monitor.alerts)
        return raised

    def mark(self, raised: Sequence[Alert], sink: Sink | None = None) -> None:
        """Raise each alert on a sink that marks runs (`BaseSink.alert`): tags, alerts.

        `step()` calls it with the logger's sinks; a trainer callback that logs through a
        sink of its own passes that one. A sink without ``alert`` is left alone. A tag or
        alert that fails is a warning, not an error: the step's metrics, with the alert
        count, were logged already, and training goes on.
        """
        alert = getattr(self._sinks if sink is None else sink, "alert", None)
        if not raised or not callable(alert):
            return
        total = str(len(self.alerts))
        for item in raised:
            tags = {
                "gradewire/health/alert_count": total,
                f"{item.grader}/health/alert/{item.signal}": f"step {item.step}: {item.message}",
            }
            title = f"reward health: {item.signal} on {item.grader} at step {item.step}"
            try:
                alert(title, item.message, tags)
            except Exception as exc:
                logger.warning(
                    "could not mark the run with the reward-health alert %r (%s: %s); the "
                    "alert count is in the step's metrics",
                    title,
                    type(exc).__name__,
                    exc,
                )

    def act(self, raised: Sequence[Alert]) -> None:
        """Warn about the alerts, or raise `RewardHealthError` (``on_alert="raise"``)."""
        if not raised:
            return
        if self.on_alert == "raise":
            raise RewardHealthError(raised)
        if distributed_rank() == 0:
            for alert in raised:
                logger.warning("reward health alert at %s", alert)

    def close(self) -> None:
        """Close the sinks. What was recorded after the last `step()` is not logged."""
        if self._closed:
            return
        self._closed = True
        if len(self._samples):
            logger.warning(
                "RewardLogger closed with %d recorded sample values not yet logged; call "
                "step() before close() to log them",
                len(self._samples),
            )
        if self._sinks is not None:
            self._sinks.close()

    def __enter__(self) -> RewardLogger:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RewardLogger(graders={list(self.graders)!r}, prefix={self.prefix!r})"


def _one_sink(sinks: Sink | Sequence[Sink]) -> Sink | None:
    listed = [sinks] if isinstance(sinks, Sink) else list(sinks)
    for i, sink in enumerate(listed):
        if not isinstance(sink, Sink):
            raise InvalidTypeError(
                f"sink {i} is a {type(sink).__name__}, not a sink: pass objects with "
                "log(logs, step), log_config(config) and close()"
            )
    if not listed:
        return None
    return listed[0] if len(listed) == 1 else FanOutSink(*listed)


def _edge_lookup(edges: Edges) -> Callable[[str], tuple[float, ...]]:
    if isinstance(edges, Mapping):
        table = {str(k): check_edges(v) for k, v in edges.items()}
        fallback = table.pop("*", DEFAULT_EDGES)

        def lookup(path: str) -> tuple[float, ...]:
            return table.get(path, fallback)

        return lookup
    fixed = check_edges(edges)
    return lambda path: fixed
