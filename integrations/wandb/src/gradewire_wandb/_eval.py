"""Eval runs in W&B: the statistics as summary metrics and the samples as one typed table.

Summary metrics (``<grader>/score/mean``, ``/stderr``, ``/ci_low``, ...) are what W&B's
run comparison lines up across runs; the table has a row per sample (id, prompt,
completion, then a score and an outcome column per grader, numbers typed as numbers).
W&B keeps at most ``wandb.Table.MAX_ROWS`` (10,000) rows of a table: beyond that the
table holds the first 10,000 samples and the summary says how many were left out. Each
``gradewire eval`` invocation with ``--sink wandb`` starts a W&B run in project
``WANDB_PROJECT`` (default ``gradewire-eval``); ``WANDB_MODE=offline`` works.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gradewire.eval import EvalRun, GraderSummary, Leaderboard
from gradewire.eval.runs._judge_facts import judge_facts
from gradewire_wandb._run_source import import_wandb

__all__ = ["WandbEvalTracker", "eval_tracker"]

TABLE_KEY = "eval/samples"
REPORT_KEY = "eval/report"
VERDICTS_KEY = "compare/verdicts"
SLICES_KEY = "compare/slices"
LEADERBOARD_TABLE_KEY = "leaderboard/standings"
LEADERBOARD_REPORT_KEY = "leaderboard/report"
DEFAULT_PROJECT = "gradewire-eval"


class WandbEvalTracker:
    """Logs eval runs and comparisons to W&B (the ``wandb`` eval tracker)."""

    def __init__(
        self,
        folder: Path,
        *,
        project: str | None = None,
        mode: str | None = None,
        dir: str | os.PathLike[str] | None = None,
    ) -> None:
        """Set up the tracker.

        Args:
            folder: The run folder.
            project: W&B project (default: ``WANDB_PROJECT``, else ``gradewire-eval``).
            mode: ``wandb.init`` mode (default: W&B's, which reads ``WANDB_MODE``).
            dir: ``wandb.init`` directory (default: W&B's).
        """
        self._wandb = import_wandb()
        self.folder = folder
        self.project = project or os.environ.get("WANDB_PROJECT") or DEFAULT_PROJECT
        self.mode = mode
        self.dir = dir

    def _init(self, name: str, config: dict[str, Any]) -> Any:
        kwargs: dict[str, Any] = {
            "project": self.project,
            "name": name[:128],
            "config": config,
            "reinit": "create_new",
        }
        if self.mode is not None:
            kwargs["mode"] = self.mode
        if self.dir is not None:
            kwargs["dir"] = str(self.dir)
        return self._wandb.init(**kwargs)

    def log_run(self, run: EvalRun, summaries: Sequence[GraderSummary]) -> list[str]:
        """Log the run's statistics to the summary and its samples as one table."""
        wandb = self._wandb
        config = {
            "graders": list(run.config.get("graders", [])),
            "data": run.config.get("data"),
            "cluster_key": run.cluster_key,
            # What compare checks graders by: the same hash is the same grader.
            "spec_hashes": dict(run.spec_hashes),
            # Which judge gave each judge grader's verdicts, and which models answered.
            "judges": judge_facts(run),
        }
        active = self._init(run.name, config)
        try:
            columns = ["id", "prompt", "completion"]
            for key in run.graders:
                columns += [key, f"{key}/outcome", f"{key}/reasoning"]
            limit = int(getattr(wandb.Table, "MAX_ROWS", 10_000))
            rows = []
            for record in run.records[:limit]:
                row: list[Any] = [record.id, record.prompt(), record.completion()]
                for key in run.spec_hashes:
                    outcome = run.outcome(record, key)
                    if outcome is None:
                        row += [None, "missing", ""]
                    elif outcome.grade is not None:
                        row += [outcome.value, "ok", outcome.grade.get("reasoning") or ""]
                    else:
                        row += [None, outcome.status, outcome.message or ""]
                rows.append(row)
            table = wandb.Table(columns=columns, data=rows)
            logs: dict[str, Any] = {TABLE_KEY: table}
            report = run.folder / "report.html" if run.folder is not None else None
            if report is not None and report.is_file():
                logs[REPORT_KEY] = wandb.Html(report.read_text("utf-8"), inject=False)
            active.log(logs)
            summary = dict(run.metrics())
            summary["eval/samples_count"] = len(run.records)
            summary["eval/samples_left_out_of_table"] = max(0, len(run.records) - limit)
            active.summary.update(summary)
            url = getattr(active, "url", None)
            where = url or str(getattr(active, "dir", ""))
        finally:
            active.finish()
        return [f"W&B: summary and {TABLE_KEY!r} table logged to run {active.id} ({where})"]

    def log_comparison(self, comparison: Any, html: str) -> list[str]:
        """Log a comparison as its own W&B run.

        The figures go in its summary with each grader's verdict in words
        (``compare/<grader>/verdict``); the verdicts and, with ``by``, the slices as tables
        (``compare/verdicts``, ``compare/slices``); the compare page as HTML
        (``compare/report``).
        """
        from gradewire.eval.reporting._trackers import (
            SLICE_COLUMNS,
            VERDICT_COLUMNS,
            comparison_metrics,
            comparison_slices,
            comparison_verdicts,
        )

        wandb = self._wandb
        active = self._init(
            f"compare {comparison.run_b} vs {comparison.run_a}",
            {"run_a": comparison.run_a, "run_b": comparison.run_b, "by": comparison.by},
        )
        try:
            logs: dict[str, Any] = {
                "compare/report": wandb.Html(html, inject=False),
                VERDICTS_KEY: wandb.Table(
                    columns=list(VERDICT_COLUMNS), data=comparison_verdicts(comparison)
                ),
            }
            if comparison.by is not None:
                logs[SLICES_KEY] = wandb.Table(
                    columns=list(SLICE_COLUMNS), data=comparison_slices(comparison)
                )
            active.log(logs)
            summary: dict[str, Any] = dict(comparison_metrics(comparison))
            summary.update({f"compare/{g.grader}/verdict": g.verdict for g in comparison.graders})
            active.summary.update(summary)
        finally:
            active.finish()
        return [f"W&B: comparison logged to run {active.id}"]

    def log_report(
        self,
        kind: str,
        name: str,
        metrics: Mapping[str, float],
        graders: Sequence[str],
        html: str,
        data: Mapping[str, Any],
    ) -> list[str]:
        """Log figures about a run (an agreement) as a W&B run: summary and the page."""
        del graders  # W&B takes any metric name
        active = self._init(name, {"report": kind})
        try:
            active.log({f"{kind}/report": self._wandb.Html(html, inject=False)})
            active.summary.update(dict(metrics))
        finally:
            active.finish()
        return [f"W&B: {kind} logged to run {active.id}"]

    def log_leaderboard(self, board: Leaderboard, html: str, runs: Sequence[EvalRun]) -> list[str]:
        """Log a leaderboard as one W&B run: its standings table, bar charts and page.

        - ``leaderboard/standings``: a table with a row per run and grader (run, grader,
          mean, low, high, rank_low, rank_high, tier, method).
        - ``leaderboard/<grader>/means``: W&B's bar chart of each run's mean (a native
          panel; W&B's built-in charts draw no error bars, and a chart of one's own needs
          a Vega spec saved on the W&B server, which an offline run cannot do);
        - ``leaderboard/<grader>/intervals``: the same bars with each mean's interval as
          an error bar and the tiers' colours, drawn as SVG in an HTML panel;
        - ``leaderboard/report``: the leaderboard page; the summary holds
          ``<grader>/<run>/mean``, ``/ci_low``, ``/ci_high``, ``/rank_low``, ... .
        """
        from gradewire.eval.reporting._leaderboard_page import leaderboard_metrics, mean_bars
        from gradewire.eval.reporting._page import page
        from gradewire.eval.reporting._trackers import LEADERBOARD_COLUMNS, leaderboard_rows

        del runs  # a W&B run is not a source a leaderboard reads: nothing to mark
        wandb = self._wandb
        active = self._init(
            f"leaderboard of {len(board.runs)} runs",
            {
                "report": "leaderboard",
                "runs": list(board.runs),
                "adjustment": board.adjustment,
                "confidence": board.confidence,
                "cluster_key": board.cluster_key,
            },
        )
        try:
            logs: dict[str, Any] = {
                LEADERBOARD_TABLE_KEY: wandb.Table(
                    columns=list(LEADERBOARD_COLUMNS), data=leaderboard_rows(board)
                ),
                LEADERBOARD_REPORT_KEY: wandb.Html(html, inject=False),
            }
            for g in board.graders:
                if not g.runs:
                    continue
                # A mean that is not a number has no bar (a table cell of None, not NaN).
                bars = [[r.run, r.mean if math.isfinite(r.mean) else None] for r in g.runs]
                means = wandb.Table(columns=["run", "mean"], data=bars)
                logs[f"leaderboard/{g.grader}/means"] = wandb.plot.bar(
                    means, "run", "mean", title=f"{g.grader}: mean per run"
                )
                chart = page(f"{g.grader}: means with intervals", mean_bars(g))
                logs[f"leaderboard/{g.grader}/intervals"] = wandb.Html(chart, inject=False)
            active.log(logs)
            summary: dict[str, Any] = dict(leaderboard_metrics(board))
            summary.update({f"{g.grader}/summary": g.summary() for g in board.graders})
            active.summary.update(summary)
        finally:
            active.finish()
        return [f"W&B: leaderboard logged to run {active.id}"]


def eval_tracker(folder: Path) -> WandbEvalTracker:
    """The ``eval_tracker.wandb`` entry point: a `WandbEvalTracker`."""
    return WandbEvalTracker(folder)
