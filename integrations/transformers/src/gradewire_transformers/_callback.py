"""GradewireCallback: full grader statistics at the HF Trainer's logging steps."""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from gradewire import BaseGrader, FanOutSink, InvalidTypeError, MissingDependencyError, RewardLogger
from gradewire.core import LogValue
from gradewire.sinks import Sink
from gradewire.train import Alert, FailurePolicy, RewardMonitor
from gradewire.train._failure_policy import resolve_failure
from gradewire_transformers._reward import TrlReward

try:
    from transformers import TrainerCallback
except ImportError:  # the package imports without the extra; the callback says what to install

    class TrainerCallback:  # type: ignore[no-redef]
        """Stands in for transformers.TrainerCallback when transformers is missing."""

        _missing = True


__all__ = ["FAMILIES_TAG", "WANDB_STEP_METRIC", "GradewireCallback", "metric_families"]

logger = logging.getLogger("gradewire")

_PURPOSE = "log grader statistics from a transformers / TRL trainer"

WANDB_STEP_METRIC = "train/global_step"
"""The x axis the HF Trainer's W&B callback declares, and so the one these figures use."""


FAMILIES_TAG = "gradewire.metric_families"
"""The MLflow run tag that tells the trainer's reward figures from gradewire's."""


def metric_families(prefix: str | None) -> str:
    """The text of the `FAMILIES_TAG` tag: which metric names are whose, and how made.

    TRL logs ``rewards/<function>/mean`` and ``/std`` into the same run as the callback's
    ``rewards/<grader>/score/...``; MLflow shows them side by side with nothing else to
    tell a reader that they are two families computed two ways.
    """
    root = "" if prefix is None else f"{prefix}/"
    return (
        f"{root}<grader>/<field>/{{mean,std,min,max,count}}, {root}<grader>/score/"
        "{abstained_count,error_count,timeout_count,histogram,length_corr,...} and "
        f"{root}<grader>/health/...: gradewire's (GradewireCallback), exact over each "
        "logging window, failed and abstained samples counted apart and left out of the "
        "statistics. rewards/<function>/mean, rewards/<function>/std, reward, reward_std, "
        "frac_reward_zero_std: the trainer's own (TRL), a plain mean of per-batch figures "
        "when logging_steps > 1, failed samples as NaN."
    )


def tracker_sinks(report_to: Sequence[str], prefix: str | None = "rewards") -> list[Sink]:
    """Sinks into the runs the trainer's own W&B / MLflow callbacks have open.

    The MLflow run gets a `FAMILIES_TAG` tag naming the two families of reward figures.
    """
    sinks: list[Sink] = []
    wandb = sys.modules.get("wandb")
    if "wandb" in report_to and wandb is not None and getattr(wandb, "run", None) is not None:
        from gradewire_wandb import WandbSink

        sinks.append(
            WandbSink(run=wandb.run, step_metric=WANDB_STEP_METRIC, incremental_tables=True)
        )
    mlflow = sys.modules.get("mlflow")
    if "mlflow" in report_to and mlflow is not None:
        active = mlflow.active_run()
        if active is not None:
            from gradewire_mlflow import MlflowSink

            sinks.append(
                MlflowSink(
                    run_id=active.info.run_id,
                    tracking_uri=mlflow.get_tracking_uri(),
                    tags={FAMILIES_TAG: metric_families(prefix)},
                )
            )
    return sinks


class GradewireCallback(TrainerCallback):
    """Logs every grader's full statistics at the trainer's logging steps.

    At each ``on_log`` (the trainer's ``logging_steps``), the callback drains the graders
    of the given reward functions and logs, at ``state.global_step``: each grader's
    mean/std/min/max/count and abstention and error counts exact over the logging window
    (not a mean of per-batch means), histograms, the share of zero-spread groups, the
    reward/length correlation and a CombinedGrader's totals (see `gradewire.RewardLogger`).
    Under torch.distributed the windows of all ranks are merged first; only world process
    zero writes.

    Where: by default into the trackers the trainer reports to, so one run holds the
    trainer's figures and the graders': the active W&B run, on the trainer's own x axis
    ``train/global_step`` (the graders' sample tables as incremental tables, one growing
    table per key with a ``step`` column), and the active MLflow run with
    ``step=global_step`` (tables as JSON tables and HTML pages). The callback runs after
    the trainer's tracker callbacks, so it writes rows of its own in those runs rather
    than adding keys to the trainer's. Pass ``sinks`` to log through gradewire sinks
    instead.

    Args:
        rewards: The `trl_reward` functions given to the trainer (or plain graders,
            which then get only their own statistics: the derived figures need the
            samples the reward functions see).
        sinks: Where to log instead of the trainer's trackers.
        prefix: The section of every key (default ``rewards``: ``rewards/<key>/score/mean``).
        histogram_edges: Bin edges of the histograms (see `RewardLogger`).
        table_every: Log sample tables at global steps that are multiples of this.
        failure: The fail-fast bound over the completions the reward functions graded
            (`FailurePolicy`: stop training with `GraderFailingError` once at least
            ``max_error_rate`` of a grader's window failed; see `RewardLogger`). Each
            `trl_reward` also checks its own policy.
        gold: A trusted grader graded beside the reward functions on ``gold_fraction``
            of the completions (picked by a hash of each one), for the reward-health
            figures and the ``gold_decline`` alert (see `gradewire.train.RewardMonitor`).
        gold_fraction: The share of completions the gold grades.
        monitor: The `RewardMonitor` (True: the default one; False: no health alerts).
        on_alert: ``"warn"``: log alerts and train on; ``"raise"``: stop training at the
            logging step that raised one (`RewardHealthError`), as fail-fast does.
        **deprecated: ``max_error_rate=``, ``error_window=``: warn, and mean the
            `FailurePolicy` fields of the same names.
    """

    def __init__(
        self,
        *rewards: TrlReward | BaseGrader,
        sinks: Sink | Sequence[Sink] | None = None,
        prefix: str | None = "rewards",
        histogram_edges: Sequence[float] | Mapping[str, Sequence[float]] | None = None,
        table_every: int = 1,
        failure: FailurePolicy | None = None,
        gold: BaseGrader | None = None,
        gold_fraction: float = 0.25,
        monitor: RewardMonitor | bool = True,
        on_alert: Literal["warn", "raise"] = "warn",
        **deprecated: Any,
    ) -> None:
        if getattr(TrainerCallback, "_missing", False):
            raise MissingDependencyError("transformers", extra="trl", purpose=_PURPOSE)
        graders: list[BaseGrader] = []
        for i, reward in enumerate(rewards):
            if isinstance(reward, TrlReward):
                graders.append(reward.grader)
            elif isinstance(reward, BaseGrader):
                graders.append(reward)
            else:
                raise InvalidTypeError(
                    f"GradewireCallback argument {i} is a {type(reward).__name__}; pass the "
                    "trl_reward(...) functions given to the trainer, or graders"
                )
        self.reward_logger = RewardLogger(
            graders,
            prefix=prefix,
            histogram_edges=histogram_edges,
            table_every=table_every,
            failure=resolve_failure(failure, deprecated, where="GradewireCallback"),
            gold=gold,
            gold_fraction=gold_fraction,
            monitor=monitor,
            on_alert=on_alert,
        )
        self.reward_logger.fail_fast.where = "GradewireCallback(...)"
        for reward in rewards:
            if isinstance(reward, TrlReward):
                reward.attach(self.reward_logger)
        self._given: Sink | None = None
        if sinks is not None:
            listed = [sinks] if isinstance(sinks, Sink) else list(sinks)
            self._given = listed[0] if len(listed) == 1 else FanOutSink(*listed)
        self._sink: Sink | None = self._given
        self._warned = False
        self._raised: list[Alert] = []

    def _target(self, report_to: Sequence[str]) -> Sink | None:
        if self._sink is None:
            found = tracker_sinks(report_to, self.reward_logger.prefix)
            if found:
                self._sink = found[0] if len(found) == 1 else FanOutSink(*found)
            elif not self._warned:
                self._warned = True
                logger.warning(
                    "GradewireCallback found no W&B or MLflow run to log to (report_to=%s); "
                    "pass sinks=... to log the graders' statistics elsewhere",
                    list(report_to),
                )
        return self._sink

    def logs_at(self, step: int, *, main: bool) -> dict[str, LogValue]:
        """Drain the window and build this step's logs ({} on other ranks or when empty)."""
        tables = self.reward_logger.tables(step) if main else {}
        window = self.reward_logger.collect()  # every rank, even when it has nothing
        if window.empty:
            return {}
        logs = window.to_logs(self.reward_logger.prefix)
        # Every rank watches the same merged figures, so every rank raises alike.
        self._raised = self.reward_logger.watch(step, logs)
        if not main:
            return {}
        logs.update(tables)
        return logs

    def on_log(
        self, args: Any, state: Any, control: Any, logs: Mapping[str, Any] | None = None, **kw: Any
    ) -> None:
        """Log the window that ends at this logging step."""
        step = int(state.global_step)
        self._raised = []
        out = self.logs_at(step, main=bool(state.is_world_process_zero))
        if out:
            sink = self._target(list(getattr(args, "report_to", None) or []))
            if sink is not None:
                sink.log(out, step)
                self.reward_logger.mark(self._raised, sink)
        self.reward_logger.act(self._raised)

    def on_train_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        """Deliver what the tracker sinks hold; the runs stay the trainer's to finish.

        Sinks passed as ``sinks`` are left open: they belong to the caller, who may train
        again with them.
        """
        if self._sink is not None and self._sink is not self._given:
            sink, self._sink = self._sink, self._given
            sink.close()
