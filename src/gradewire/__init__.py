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

from gradewire._background_sink import BackgroundSink
from gradewire._base_sink import BaseSink
from gradewire._bash_grader import BashGrader, CompletionVia
from gradewire._binary_judge import BinaryJudgeGrader, JudgeShot
from gradewire._chat_model import ChatCompletion, ChatMessage, ChatModel, TokenLogprob, Usage
from gradewire._combine import combine, combine_all, combine_any
from gradewire._combined_grader import CombinedGrader
from gradewire._console_sink import ConsoleSink
from gradewire._delivery_report import DeliveryReport
from gradewire._endpoint_grader import EndpointGrader
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
from gradewire._factory import build_grader, grader_config, load_graders
from gradewire._failure_records import attach_log_fields
from gradewire._fanout_sink import FanOutSink
from gradewire._grade import Grade, SubScore
from gradewire._grader import BaseGrader, GradeFunction, LogValue
from gradewire._jsonl_sink import JsonlRun, JsonlSink, read_jsonl
from gradewire._judge_base import JudgeGrader
from gradewire._judge_cache import JudgeCache
from gradewire._judge_context import JudgedSample
from gradewire._judge_logs import FailedJudgeLog, SuccessJudgeLog
from gradewire._memory_sink import MemorySink
from gradewire._numeric import numeric_match
from gradewire._openai_chat import OpenAIChatModel
from gradewire._rag_judges import AnswerRelevancyGrader, ContextRelevancyGrader, FaithfulnessGrader
from gradewire._range_judge import RangeJudgeGrader
from gradewire._rank import is_main_process, process_rank
from gradewire._retry import ModelHTTPError, RetryPolicy
from gradewire._reward_server import create_app, serve
from gradewire._rubric_judge import LLMJudgeGrader
from gradewire._sink import Logs, Sink, StepLogs
from gradewire._spill_format import read_spill, read_spill_configs
from gradewire._stats import LogState, Stats
from gradewire._structured import pydantic_parse
from gradewire._structured_call import complete_structured
from gradewire._sync import run_sync
from gradewire._table import Table
from gradewire._table_policy import PolicyState, TablePolicy
from gradewire._text import contains, contains_all, contains_any, exact_match, f1_score, normalize
from gradewire._thread import Role, StringThread, Turn

__version__ = "0.1.0"

__all__ = [
    "AnswerRelevancyGrader",
    "BackgroundSink",
    "BaseGrader",
    "BaseSink",
    "BashGrader",
    "BinaryJudgeGrader",
    "ChatCompletion",
    "ChatMessage",
    "ChatModel",
    "CombinedGrader",
    "CompletionVia",
    "ConsoleSink",
    "ContextRelevancyGrader",
    "DeliveryReport",
    "EndpointGrader",
    "EvaluationResult",
    "FailedJudgeLog",
    "FaithfulnessGrader",
    "FanOutSink",
    "Grade",
    "GradeFunction",
    "GradewireError",
    "GradingError",
    "IgnoreGradeException",
    "InvalidInputError",
    "InvalidTypeError",
    "JsonlRun",
    "JsonlSink",
    "JudgeCache",
    "JudgeGrader",
    "JudgeShot",
    "JudgedSample",
    "LLMJudgeGrader",
    "LogState",
    "LogValue",
    "Logs",
    "MemorySink",
    "MissingDependencyError",
    "ModelCallError",
    "ModelHTTPError",
    "OpenAIChatModel",
    "OutputParserException",
    "PolicyState",
    "RangeJudgeGrader",
    "RetryPolicy",
    "Role",
    "Sink",
    "SinkError",
    "Stats",
    "StepLogs",
    "StringThread",
    "SubScore",
    "SuccessJudgeLog",
    "Table",
    "TablePolicy",
    "TokenLogprob",
    "Turn",
    "Usage",
    "__version__",
    "attach_log_fields",
    "build_grader",
    "combine",
    "combine_all",
    "combine_any",
    "complete_structured",
    "contains",
    "contains_all",
    "contains_any",
    "create_app",
    "exact_match",
    "f1_score",
    "grader_config",
    "is_main_process",
    "load_graders",
    "normalize",
    "numeric_match",
    "process_rank",
    "pydantic_parse",
    "read_jsonl",
    "read_spill",
    "read_spill_configs",
    "run_sync",
    "serve",
]
