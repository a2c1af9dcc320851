"""The eval driver: grade a data set into a run folder, summarise it, compare two runs.

`run_eval` reads JSONL, CSV, Parquet or a saved Hugging Face dataset, grades each sample
with every grader (resuming what the folder already holds), and writes ``results.jsonl``,
``config.json``, ``summary.json`` and a self-contained ``report.html``. `load_run` reads a
folder back as an `EvalRun`; `compare_runs` pairs two runs by sample id (refusing pairs
whose prompts differ and graders whose spec changed) and gives each grader's mean
difference with a paired bootstrap interval (`paired_bootstrap`) and a p-value;
`judge_runs` asks a pairwise judge which run's completion is better, and the audits
(`audit_retest`, `audit_position`, `audit_length`) measure a judge on the user's samples. gradewire
writes only into its own run folders (`RunFolderError` otherwise), one eval at a time.
Imports `core`, `stats`, `sinks`, `judges` and `specs`; trackers and grading engines
(`eval_engine`: Ray) plug in through entry points. Each name is imported when first used.
"""

from typing import TYPE_CHECKING

from gradewire.core._lazy import attach

if TYPE_CHECKING:
    from gradewire.eval._audit import (
        LengthAudit,
        PositionAudit,
        RetestAudit,
        audit_length,
        audit_position,
        audit_retest,
    )
    from gradewire.eval._bootstrap import BootstrapInterval, paired_bootstrap
    from gradewire.eval._compare import MismatchedRunsError, compare_runs
    from gradewire.eval._compare_report import render_comparison
    from gradewire.eval._comparison import (
        ChangedSample,
        Comparison,
        GraderComparison,
        SliceComparison,
    )
    from gradewire.eval._data import load_samples
    from gradewire.eval._display import RichDisplay
    from gradewire.eval._engines import GradingEngine, eval_engine
    from gradewire.eval._eval import EvalResult, run_eval
    from gradewire.eval._judged_pairs import JudgedComparison, judge_runs
    from gradewire.eval._records import GradeOutcome, SampleRecord
    from gradewire.eval._report import render_report, write_report
    from gradewire.eval._run import EvalRun, load_run
    from gradewire.eval._run_folder import RunFolderError
    from gradewire.eval._runner import EvalDisplay, GradingReport
    from gradewire.eval._samples import DataError, DataOptions, EvalSample
    from gradewire.eval._statistics import GraderSummary

__all__ = [
    "BootstrapInterval",
    "ChangedSample",
    "Comparison",
    "DataError",
    "DataOptions",
    "EvalDisplay",
    "EvalResult",
    "EvalRun",
    "EvalSample",
    "GradeOutcome",
    "GraderComparison",
    "GraderSummary",
    "GradingEngine",
    "GradingReport",
    "JudgedComparison",
    "LengthAudit",
    "MismatchedRunsError",
    "PositionAudit",
    "RetestAudit",
    "RichDisplay",
    "RunFolderError",
    "SampleRecord",
    "SliceComparison",
    "audit_length",
    "audit_position",
    "audit_retest",
    "compare_runs",
    "eval_engine",
    "judge_runs",
    "load_run",
    "load_samples",
    "paired_bootstrap",
    "render_comparison",
    "render_report",
    "run_eval",
    "write_report",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(
        __name__,
        {
            "._audit": [
                "LengthAudit",
                "PositionAudit",
                "RetestAudit",
                "audit_length",
                "audit_position",
                "audit_retest",
            ],
            "._bootstrap": ["BootstrapInterval", "paired_bootstrap"],
            "._compare": ["MismatchedRunsError", "compare_runs"],
            "._compare_report": ["render_comparison"],
            "._comparison": ["ChangedSample", "Comparison", "GraderComparison", "SliceComparison"],
            "._data": ["load_samples"],
            "._display": ["RichDisplay"],
            "._engines": ["GradingEngine", "eval_engine"],
            "._eval": ["EvalResult", "run_eval"],
            "._judged_pairs": ["JudgedComparison", "judge_runs"],
            "._records": ["GradeOutcome", "SampleRecord"],
            "._report": ["render_report", "write_report"],
            "._run": ["EvalRun", "load_run"],
            "._run_folder": ["RunFolderError"],
            "._runner": ["EvalDisplay", "GradingReport"],
            "._samples": ["DataError", "DataOptions", "EvalSample"],
            "._statistics": ["GraderSummary"],
        },
    )
