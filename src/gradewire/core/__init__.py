"""The core: threads, grades, graders with their logging core, tables and combining.

A `StringThread` goes into `BaseGrader.grade`, a `Grade` comes out, and every record the
grader logs with `BaseGrader.add_log` is aggregated by `BaseGrader.get_logs` (or exported as
a mergeable `LogState`). This folder imports no other gradewire folder. Each name is
imported when first used.
"""

from gradewire.core._lazy import HUD_NAMES, attach

# typing.TYPE_CHECKING without importing typing, which `import gradewire` does not need
# (type checkers treat any TYPE_CHECKING name as true).
TYPE_CHECKING = False

if TYPE_CHECKING:
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
    from gradewire.core._failure_records import attach_log_fields
    from gradewire.core._grade import Grade
    from gradewire.core._grader import BaseGrader, GradeFunction, LogValue
    from gradewire.core._histogram import Histogram
    from gradewire.core._log_state import LogState, Stats
    from gradewire.core._sync import run_sync
    from gradewire.core._table import Table
    from gradewire.core._thread import Role, StringThread, Turn

_HUD_NAMES = ("EvaluationResult", "SubScore", "combine", "combine_all", "combine_any")

__all__ = [
    "BaseGrader",
    "CombinedGrader",
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
    "Table",
    "Turn",
    "attach_log_fields",
    "run_sync",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(
        __name__,
        {
            "._combined_grader": ["CombinedGrader"],
            "._errors": [
                "GradeTimeoutError",
                "GraderFailingError",
                "GradewireError",
                "GradingError",
                "IgnoreGradeException",
                "InvalidInputError",
                "InvalidTypeError",
                "MissingDependencyError",
                "ModelCallError",
                "OutputParserException",
                "SinkError",
            ],
            "._failure_records": ["attach_log_fields"],
            "._grade": ["Grade"],
            "._grader": ["BaseGrader", "GradeFunction", "LogValue"],
            "._histogram": ["Histogram"],
            "._log_state": ["LogState", "Stats"],
            "._sync": ["run_sync"],
            "._table": ["Table"],
            "._thread": ["Role", "StringThread", "Turn"],
        },
        moved={name: HUD_NAMES[name] for name in _HUD_NAMES},
    )
