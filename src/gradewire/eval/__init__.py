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

from gradewire.core._lazy import attach

TYPE_CHECKING = False  # typing's, without importing typing: type checkers take it as true

# The public names, one line each: from <module> import <Name> as <Name> (gradewire.core._lazy).
if TYPE_CHECKING:
    from gradewire.eval.auditing._alignment import AlignmentCandidate as AlignmentCandidate
    from gradewire.eval.auditing._alignment import JudgeAlignment as JudgeAlignment
    from gradewire.eval.auditing._alignment import align_judge as align_judge
    from gradewire.eval.auditing._calibration import ThresholdCalibration as ThresholdCalibration
    from gradewire.eval.auditing._calibration import calibrate_threshold as calibrate_threshold
    from gradewire.eval.auditing._certificate import certify_judge as certify_judge
    from gradewire.eval.auditing._judge_audits import LengthAudit as LengthAudit
    from gradewire.eval.auditing._judge_audits import PositionAudit as PositionAudit
    from gradewire.eval.auditing._judge_audits import RetestAudit as RetestAudit
    from gradewire.eval.auditing._judge_audits import audit_length as audit_length
    from gradewire.eval.auditing._judge_audits import audit_position as audit_position
    from gradewire.eval.auditing._judge_audits import audit_retest as audit_retest
    from gradewire.eval.comparing._bootstrap import BootstrapInterval as BootstrapInterval
    from gradewire.eval.comparing._bootstrap import paired_bootstrap as paired_bootstrap
    from gradewire.eval.comparing._compare_runs import MismatchedRunsError as MismatchedRunsError
    from gradewire.eval.comparing._compare_runs import compare_runs as compare_runs
    from gradewire.eval.comparing._judged_pairs import JudgedComparison as JudgedComparison
    from gradewire.eval.comparing._judged_pairs import judge_runs as judge_runs
    from gradewire.eval.comparing._results import ChangedSample as ChangedSample
    from gradewire.eval.comparing._results import Comparison as Comparison
    from gradewire.eval.comparing._results import GraderComparison as GraderComparison
    from gradewire.eval.comparing._results import SliceComparison as SliceComparison
    from gradewire.eval.grading._display import RichDisplay as RichDisplay
    from gradewire.eval.grading._engines import GradingEngine as GradingEngine
    from gradewire.eval.grading._engines import eval_engine as eval_engine
    from gradewire.eval.grading._grading_loop import EvalDisplay as EvalDisplay
    from gradewire.eval.grading._grading_loop import GradingReport as GradingReport
    from gradewire.eval.grading._run_eval import EvalResult as EvalResult
    from gradewire.eval.grading._run_eval import run_eval as run_eval
    from gradewire.eval.ranking._leaderboard import leaderboard as leaderboard
    from gradewire.eval.ranking._standings import GraderBoard as GraderBoard
    from gradewire.eval.ranking._standings import Leaderboard as Leaderboard
    from gradewire.eval.ranking._standings import PairResult as PairResult
    from gradewire.eval.ranking._standings import RunStanding as RunStanding
    from gradewire.eval.reporting._compare_page import render_comparison as render_comparison
    from gradewire.eval.reporting._eval_report import render_report as render_report
    from gradewire.eval.reporting._eval_report import write_report as write_report
    from gradewire.eval.reporting._leaderboard_page import render_leaderboard as render_leaderboard
    from gradewire.eval.runs._data_files import load_samples as load_samples
    from gradewire.eval.runs._eval_run import EvalRun as EvalRun
    from gradewire.eval.runs._eval_run import load_run as load_run
    from gradewire.eval.runs._folder import RunFolderError as RunFolderError
    from gradewire.eval.runs._open_run import open_run as open_run
    from gradewire.eval.runs._records import GradeOutcome as GradeOutcome
    from gradewire.eval.runs._records import SampleRecord as SampleRecord
    from gradewire.eval.runs._samples import DataError as DataError
    from gradewire.eval.runs._samples import DataOptions as DataOptions
    from gradewire.eval.runs._samples import EvalSample as EvalSample
    from gradewire.eval.runs._statistics import GraderSummary as GraderSummary
    from gradewire.judges._certificate import CertificateError as CertificateError
    from gradewire.judges._certificate import JudgeCertificate as JudgeCertificate
    from gradewire.judges._certificate import check_certificate as check_certificate
    from gradewire.judges._certificate import require_certificate as require_certificate

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(__name__)
