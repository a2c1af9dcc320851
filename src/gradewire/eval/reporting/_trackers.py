"""Trackers for eval runs and comparisons, found through entry points.

An integration offers an `EvalTracker` factory as an ``eval_tracker``
(`gradewire.core._integrations`: ``mlflow``, ``wandb``): ``factory(folder)`` returns a tracker whose
`EvalTracker.log_run` logs a whole run the way that tracker shows evals (reading a run
back from a tracker is `gradewire.eval.runs._sources`). The core never imports an
integration by name.

Plain sinks (`JsonlSink`, `ConsoleSink`) get the run's metrics and sample tables as one
step, through `log_run_to_sink`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from gradewire.core import LogValue, MissingDependencyError
from gradewire.core._integrations import integrations
from gradewire.eval.comparing._results import Comparison
from gradewire.eval.ranking._standings import Leaderboard
from gradewire.eval.runs._eval_run import EvalRun
from gradewire.eval.runs._statistics import GraderSummary
from gradewire.sinks import Sink

__all__ = [
    "LEADERBOARD_COLUMNS",
    "SLICE_COLUMNS",
    "VERDICT_COLUMNS",
    "EvalTracker",
    "comparison_metrics",
    "comparison_slices",
    "comparison_verdicts",
    "eval_tracker",
    "interval_methods",
    "leaderboard_rows",
    "log_comparison_to_sink",
    "log_run_to_sink",
]


class EvalTracker(Protocol):
    """Logs eval runs and comparisons to one tracker; each call returns lines to print."""

    def log_run(self, run: EvalRun, summaries: Sequence[GraderSummary]) -> list[str]:
        """Log a whole run (samples, grades, statistics)."""

    def log_comparison(self, comparison: Comparison, html: str) -> list[str]:
        """Log a comparison of two runs, with its HTML report."""

    def log_report(
        self,
        kind: str,
        name: str,
        metrics: Mapping[str, float],
        graders: Sequence[str],
        html: str,
        data: Mapping[str, Any],
    ) -> list[str]:
        """Log figures about a run (``kind``: ``"agreement"``) as a tracker run of their own.

        ``metrics`` are named ``<kind>/<grader>/...`` for the ``graders`` given; ``html``
        is the report page and ``data`` its JSON form.
        """

    def log_leaderboard(self, board: Leaderboard, html: str, runs: Sequence[EvalRun]) -> list[str]:
        """Log a leaderboard as a tracker run of its own, with its page.

        ``runs`` are the runs it ranks, in the order of ``board.runs`` (a tracker may mark
        those that are its own runs with their standing).
        """


def eval_tracker(name: str, folder: Path) -> EvalTracker:
    """The tracker an installed integration offers under ``name``.

    Raises:
        MissingDependencyError: No installed integration offers it (the message has the
            pip command of the extra of that name).
    """
    entry = integrations("eval_tracker").get(name)
    if entry is not None:
        factory: Callable[[Path], EvalTracker] = entry.load()
        return factory(folder)
    raise MissingDependencyError(f"gradewire[{name}]", extra=name, purpose=f"log evals to {name}")


def log_run_to_sink(run: EvalRun, sink: Sink) -> None:
    """The run's config, metrics and sample tables to a plain sink, as step 0.

    The config names each grader's interval method (``interval_methods``) and, where the
    audit found the method unreliable at such data, why (``interval_caveats``), since the
    metrics ``<key>/score/ci_low`` and ``/ci_high`` are numbers only.
    """
    sink.log_config(
        {
            "graders": list(run.config.get("graders", [])),
            "data": run.config.get("data"),
            "interval_methods": interval_methods(run),
            "interval_caveats": {s.grader: s.caveat for s in run.summaries() if s.caveat},
        }
    )
    logs: dict[str, LogValue] = dict(run.metrics())
    logs.update(run.tables())
    sink.log(logs, 0)


def interval_methods(run: EvalRun) -> dict[str, str]:
    """Per grader, the method of its mean's interval in words (and of its pass rate's)."""
    methods: dict[str, str] = {}
    for summary in run.summaries():
        methods[summary.grader] = summary.method_name
        if summary.pass_method is not None:
            methods[f"{summary.grader}/passed"] = summary.to_dict()["pass_method_name"]
    return methods


def comparison_metrics(comparison: Comparison) -> dict[str, float]:
    """``compare/<grader>/diff``, ``/ci_low``, ``/ci_high``, ``/p_value``, ... (finite only)."""
    metrics: dict[str, float] = {}
    for result in comparison.graders:
        for name in (
            "mean_a",
            "mean_b",
            "diff",
            "stderr",
            "ci_low",
            "ci_high",
            "p_value",
            "p_value_holm",
            "detectable",
        ):
            value = getattr(result, name)
            if value == value:  # not NaN
                metrics[f"compare/{result.grader}/{name}"] = value
        for name in ("n_pairs", "wins", "ties", "losses"):
            metrics[f"compare/{result.grader}/{name}"] = getattr(result, name)
    metrics["compare/unpaired_a"] = len(comparison.only_a)
    metrics["compare/unpaired_b"] = len(comparison.only_b)
    return metrics


VERDICT_COLUMNS = (
    "grader",
    "verdict",
    "n_pairs",
    "diff",
    "ci_low",
    "ci_high",
    "p_value",
    "p_value_holm",
    "method",
    "wins",
    "ties",
    "losses",
)
SLICE_COLUMNS = (
    "grader",
    "slice",
    "n_pairs",
    "mean_a",
    "mean_b",
    "diff",
    "ci_low",
    "ci_high",
    "p_value",
    "flips",
    "flips_clearly",
    "method",
    "note",
)


def _cell(value: Any) -> Any:
    """A table cell: NaN as None (trackers' tables have no NaN)."""
    return None if isinstance(value, float) and value != value else value


def comparison_verdicts(comparison: Comparison) -> list[list[Any]]:
    """One row per grader (`VERDICT_COLUMNS`): its verdict in words and its figures.

    The verdict holds the grader key as plain text: a tracker that renders it as markup
    escapes it.
    """
    return [[_cell(getattr(g, name)) for name in VERDICT_COLUMNS] for g in comparison.graders]


def comparison_slices(comparison: Comparison) -> list[list[Any]]:
    """One row per grader and slice of ``by`` (`SLICE_COLUMNS`); none without ``by``."""
    return [
        [g.grader, s.value, *(_cell(getattr(s, name)) for name in SLICE_COLUMNS[2:])]
        for g in comparison.graders
        for s in g.slices
    ]


LEADERBOARD_COLUMNS = (
    "run",
    "grader",
    "mean",
    "low",
    "high",
    "rank_low",
    "rank_high",
    "tier",
    "method",
)


def leaderboard_rows(board: Leaderboard) -> list[list[Any]]:
    """One row per run and grader (`LEADERBOARD_COLUMNS`), whole boards, best mean first.

    ``low`` and ``high`` are the mean's interval (None where there is none: ``method``
    says why), ``rank_low`` to ``rank_high`` the ranks the run could hold.
    """
    return [
        [
            r.run,
            g.grader,
            _cell(r.mean),
            _cell(r.low),
            _cell(r.high),
            r.rank_low,
            r.rank_high,
            r.tier,
            r.method,
        ]
        for g in board.graders
        for r in g.runs
    ]


def log_comparison_to_sink(comparison: Comparison, sink: Sink) -> None:
    """A comparison's figures to a plain sink, as step 0."""
    sink.log_config({"run_a": comparison.run_a, "run_b": comparison.run_b})
    sink.log(dict(comparison_metrics(comparison)), 0)
