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

# The public names, one line each: from <module> import <Name> as <Name> (gradewire.core._lazy).
if TYPE_CHECKING:
    from gradewire.core._combined_grader import CombinedGrader as CombinedGrader
    from gradewire.core._errors import GraderFailingError as GraderFailingError
    from gradewire.core._errors import GradeTimeoutError as GradeTimeoutError
    from gradewire.core._errors import GradewireError as GradewireError
    from gradewire.core._errors import GradingError as GradingError
    from gradewire.core._errors import IgnoreGradeException as IgnoreGradeException
    from gradewire.core._errors import InvalidInputError as InvalidInputError
    from gradewire.core._errors import InvalidTypeError as InvalidTypeError
    from gradewire.core._errors import MissingDependencyError as MissingDependencyError
    from gradewire.core._errors import ModelCallError as ModelCallError
    from gradewire.core._errors import OutputParserException as OutputParserException
    from gradewire.core._errors import SinkError as SinkError
    from gradewire.core._failure_records import attach_log_fields as attach_log_fields
    from gradewire.core._grade import Grade as Grade
    from gradewire.core._grader import BaseGrader as BaseGrader
    from gradewire.core._grader import GradeFunction as GradeFunction
    from gradewire.core._grader import LogValue as LogValue
    from gradewire.core._histogram import Histogram as Histogram
    from gradewire.core._log_state import LogState as LogState
    from gradewire.core._log_state import Stats as Stats
    from gradewire.core._sync import run_sync as run_sync
    from gradewire.core._table import Table as Table
    from gradewire.core._thread import Role as Role
    from gradewire.core._thread import StringThread as StringThread
    from gradewire.core._thread import Turn as Turn

_HUD_NAMES = ("EvaluationResult", "SubScore", "combine", "combine_all", "combine_any")

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(__name__, moved={name: HUD_NAMES[name] for name in _HUD_NAMES})
