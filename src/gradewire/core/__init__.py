"""The core: threads, grades, graders with their logging core, tables and combining.

A `StringThread` goes into `BaseGrader.grade`, a `Grade` comes out, and every record the
grader logs with `BaseGrader.add_log` is aggregated by `BaseGrader.get_logs` (or exported as
a mergeable `LogState`). This folder imports no other gradewire folder.
"""

from gradewire.core._combine import combine, combine_all, combine_any
from gradewire.core._combined_grader import CombinedGrader
from gradewire.core._errors import (
    GraderFailingError,
    GradeTimeoutError,
    GradewireError,
    GradingError,
    IgnoreGradeException,
    InvalidInputError,
    InvalidTypeError,
    MissingDependencyError,
    ModelCallError,
    OutputParserException,
    SinkError,
)
from gradewire.core._evaluation_result import EvaluationResult
from gradewire.core._failure_records import attach_log_fields
from gradewire.core._grade import Grade
from gradewire.core._grader import BaseGrader, GradeFunction, LogValue
from gradewire.core._histogram import Histogram
from gradewire.core._stats import LogState, Stats
from gradewire.core._subscore import SubScore
from gradewire.core._sync import run_sync
from gradewire.core._table import Table
from gradewire.core._thread import Role, StringThread, Turn

__all__ = [
    "BaseGrader",
    "CombinedGrader",
    "EvaluationResult",
    "Grade",
    "GradeFunction",
    "GradeTimeoutError",
    "GraderFailingError",
    "GradewireError",
    "GradingError",
    "Histogram",
    "IgnoreGradeException",
    "InvalidInputError",
    "InvalidTypeError",
    "LogState",
    "LogValue",
    "MissingDependencyError",
    "ModelCallError",
    "OutputParserException",
    "Role",
    "SinkError",
    "Stats",
    "StringThread",
    "SubScore",
    "Table",
    "Turn",
    "attach_log_fields",
    "combine",
    "combine_all",
    "combine_any",
    "run_sync",
]
