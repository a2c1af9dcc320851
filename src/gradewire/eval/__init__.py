"""The eval driver: grade a data set into a run folder, summarise it, compare two runs.

`run_eval` reads JSONL, CSV, Parquet, a saved Hugging Face dataset or an Inspect AI log,
grades each sample with every grader (resuming what the folder already holds), and writes
``results.jsonl``, ``config.json``, ``summary.json`` and a self-contained ``report.html``.
`load_run` reads a folder back as an `EvalRun`, `open_run` any run compare takes (a run
folder, an Inspect AI log, lm-eval's sample logs, a tracker's run id); `compare_runs` pairs
two runs by sample id (refusing pairs whose prompts differ and graders whose spec changed)
and gives each grader's mean difference with an interval and a p-value from one method;
`leaderboard` ranks many runs per grader on the samples they share, with
adjusted pairwise tests, rank intervals and tiers of runs that cannot be told apart;
`judge_runs` asks a pairwise judge which run's completion is better, and the audits
(`audit_retest`, `audit_position`, `audit_length`) measure a judge on the user's samples;
`certify_judge` binds what they measure against people's labels to the judge's identity
(`JudgeCertificate`), and `require_certificate` makes `run_eval` warn or refuse when the
judge no longer holds it; `calibrate_threshold` calibrates a score-based judge's pass
threshold on labels, proven on held-out folds, and `align_judge` also tries few-shot
examples from the judge's disagreements with people and a proposed criteria text.
gradewire writes only into its own run folders (`RunFolderError` otherwise), one eval at a
time. Imports `core`, `stats`, `sinks`, `judges` and `specs`; trackers and grading engines
(`eval_engine`: Ray) plug in through entry points. Each name is imported when first used.
"""

from typing import TYPE_CHECKING

from gradewire.core._lazy import attach

if TYPE_CHECKING:
    from gradewire.eval.auditing._alignment import AlignmentCandidate, JudgeAlignment, align_judge
    from gradewire.eval.auditing._calibration import ThresholdCalibration, calibrate_threshold
    from gradewire.eval.auditing._certificate import certify_judge
    from gradewire.eval.auditing._judge_audits import (
        LengthAudit,
        PositionAudit,
        RetestAudit,
        audit_length,
        audit_position,
        audit_retest,
    )
    from gradewire.eval.comparing._bootstrap import BootstrapInterval, paired_bootstrap
    from gradewire.eval.comparing._compare_runs import MismatchedRunsError, compare_runs
    from gradewire.eval.comparing._judged_pairs import JudgedComparison, judge_runs
    from gradewire.eval.comparing._results import (
        ChangedSample,
        Comparison,
        GraderComparison,
        SliceComparison,
    )
    from gradewire.eval.grading._display import RichDisplay
    from gradewire.eval.grading._engines import GradingEngine, eval_engine
    from gradewire.eval.grading._grading_loop import EvalDisplay, GradingReport
    from gradewire.eval.grading._run_eval import EvalResult, run_eval
    from gradewire.eval.ranking._leaderboard import leaderboard
    from gradewire.eval.ranking._standings import (
        GraderBoard,
        Leaderboard,
        PairResult,
        RunStanding,
    )
    from gradewire.eval.reporting._compare_page import render_comparison
    from gradewire.eval.reporting._eval_report import render_report, write_report
    from gradewire.eval.reporting._leaderboard_page import render_leaderboard
    from gradewire.eval.runs._data_files import load_samples
    from gradewire.eval.runs._eval_run import EvalRun, load_run
    from gradewire.eval.runs._folder import RunFolderError
    from gradewire.eval.runs._judge_certificate import (
        CertificateError,
        JudgeCertificate,
        check_certificate,
        require_certificate,
    )
    from gradewire.eval.runs._open_run import open_run
    from gradewire.eval.runs._records import GradeOutcome, SampleRecord
    from gradewire.eval.runs._samples import DataError, DataOptions, EvalSample
    from gradewire.eval.runs._statistics import GraderSummary

__all__ = [
    "AlignmentCandidate",
    "BootstrapInterval",
    "CertificateError",
    "ChangedSample",
    "Comparison",
    "DataError",
    "DataOptions",
    "EvalDisplay",
    "EvalResult",
    "EvalRun",
    "EvalSample",
    "GradeOutcome",
    "GraderBoard",
    "GraderComparison",
    "GraderSummary",
    "GradingEngine",
    "GradingReport",
    "JudgeAlignment",
    "JudgeCertificate",
    "JudgedComparison",
    "Leaderboard",
    "LengthAudit",
    "MismatchedRunsError",
    "PairResult",
    "PositionAudit",
    "RetestAudit",
    "RichDisplay",
    "RunFolderError",
    "RunStanding",
    "SampleRecord",
    "SliceComparison",
    "ThresholdCalibration",
    "align_judge",
    "audit_length",
    "audit_position",
    "audit_retest",
    "calibrate_threshold",
    "certify_judge",
    "check_certificate",
    "compare_runs",
    "eval_engine",
    "judge_runs",
    "leaderboard",
    "load_run",
    "load_samples",
    "open_run",
    "paired_bootstrap",
    "render_comparison",
    "render_leaderboard",
    "render_report",
    "require_certificate",
    "run_eval",
    "write_report",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(
        __name__,
        {
            ".auditing._alignment": ["AlignmentCandidate", "JudgeAlignment", "align_judge"],
            ".auditing._calibration": ["ThresholdCalibration", "calibrate_threshold"],
            ".auditing._certificate": ["certify_judge"],
            ".auditing._judge_audits": [
                "Leaderboard",
                "LengthAudit",
                "PairResult",
                "PositionAudit",
                "RetestAudit",
                "audit_length",
                "audit_position",
                "audit_retest",
            ],
            ".comparing._bootstrap": ["BootstrapInterval", "paired_bootstrap"],
            ".comparing._compare_runs": ["MismatchedRunsError", "compare_runs"],
            ".reporting._compare_page": ["render_comparison"],
            ".ranking._leaderboard": ["leaderboard"],
            ".ranking._standings": ["GraderBoard", "Leaderboard", "PairResult", "RunStanding"],
            ".reporting._leaderboard_page": ["render_leaderboard"],
            ".comparing._results": [
                "ChangedSample",
                "Comparison",
                "GraderComparison",
                "SliceComparison",
            ],
            ".runs._data_files": ["load_samples"],
            ".grading._display": ["RichDisplay"],
            ".grading._engines": ["GradingEngine", "eval_engine"],
            ".grading._run_eval": ["EvalResult", "run_eval"],
            ".comparing._judged_pairs": ["JudgedComparison", "judge_runs"],
            ".runs._open_run": ["open_run"],
            ".runs._records": ["GradeOutcome", "SampleRecord"],
            ".reporting._eval_report": ["render_report", "write_report"],
            ".runs._eval_run": ["EvalRun", "load_run"],
            ".runs._folder": ["RunFolderError"],
            ".runs._judge_certificate": [
                "CertificateError",
                "JudgeCertificate",
                "check_certificate",
                "require_certificate",
            ],
            ".grading._grading_loop": ["EvalDisplay", "GradingReport"],
            ".runs._samples": ["DataError", "DataOptions", "EvalSample"],
            ".runs._statistics": ["GraderSummary"],
        },
    )
