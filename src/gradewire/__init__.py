"""gradewire: async graders for LLM evaluation and RL rewards, with a logging core.

A grader scores a `StringThread` and returns a `Grade`; every grader keeps a log
buffer (`BaseGrader.add_log`) whose `BaseGrader.get_logs` gives mean/std/min/max/count
per numeric key and `Table`s of samples, ready for W&B, MLflow or a notebook.

Example:
    >>> import gradewire as gw
    >>> grader = gw.BaseGrader.from_function(
    ...     "exact", lambda s: gw.exact_match(s.completion() or "", s.metadata["answer"])
    ... )
    >>> thread = gw.StringThread([("user", "Capital of France?"), ("assistant", "Paris")],
    ...                          metadata={"answer": "Paris"})
    >>> gw.run_sync(grader.grade_many([thread]))[0].value
    1.0
    >>> grader.get_logs()["score/mean"]
    1.0
"""

from types import FunctionType as _FunctionType

from gradewire._chat_model import ChatCompletion, ChatMessage, ChatModel, TokenLogprob, Usage
from gradewire._combine import combine, combine_all, combine_any
from gradewire._combined_grader import CombinedGrader
from gradewire._errors import (
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
from gradewire._evaluation_result import EvaluationResult
from gradewire._grade import Grade, SubScore
from gradewire._grader import BaseGrader, GradeFunction, LogValue
from gradewire._judge_logs import FailedJudgeLog, SuccessJudgeLog
from gradewire._numeric import numeric_match
from gradewire._sink import Logs, Sink, StepLogs
from gradewire._stats import LogState, Stats
from gradewire._structured import pydantic_parse
from gradewire._sync import run_sync
from gradewire._table import Table
from gradewire._text import contains, contains_all, contains_any, exact_match, f1_score, normalize
from gradewire._thread import Role, StringThread, Turn

__version__ = "0.1.0"

__all__ = [
    "BaseGrader",
    "ChatCompletion",
    "ChatMessage",
    "ChatModel",
    "CombinedGrader",
    "EvaluationResult",
    "FailedJudgeLog",
    "Grade",
    "GradeFunction",
    "GradewireError",
    "GradingError",
    "IgnoreGradeException",
    "InvalidInputError",
    "InvalidTypeError",
    "LogState",
    "LogValue",
    "Logs",
    "MissingDependencyError",
    "ModelCallError",
    "OutputParserException",
    "Role",
    "Sink",
    "SinkError",
    "Stats",
    "StepLogs",
    "StringThread",
    "SubScore",
    "SuccessJudgeLog",
    "Table",
    "TokenLogprob",
    "Turn",
    "Usage",
    "__version__",
    "combine",
    "combine_all",
    "combine_any",
    "contains",
    "contains_all",
    "contains_any",
    "exact_match",
    "f1_score",
    "normalize",
    "numeric_match",
    "pydantic_parse",
    "run_sync",
]

# Public objects report the public module, so reprs, docs and pickles name `gradewire`.
for _name in __all__:
    _obj = globals()[_name]
    if isinstance(_obj, (type, _FunctionType)) and _obj.__module__.startswith("gradewire._"):
        _obj.__module__ = __name__
del _name, _obj
