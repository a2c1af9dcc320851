"""gradewire: async graders for LLM evaluation and RL rewards, with a logging core.

A grader scores a `StringThread` and returns a `Grade`; every grader keeps a log
buffer (`BaseGrader.add_log`) whose `BaseGrader.get_logs` gives mean/std/min/max/count
per numeric key and `Table`s of samples, ready for W&B, MLflow or a notebook.

The root lists what a first hour with gradewire needs; the names for extending or tuning a
stage live in that stage's package (`gradewire.models.ChatCompletion`,
`gradewire.sinks.TablePolicy`, `gradewire.eval.paired_bootstrap`...). Importing gradewire
imports nothing else: each name's module is imported when the name is first used.

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

import importlib

from gradewire.core._lazy import HUD_NAMES, attach

# typing.TYPE_CHECKING without importing typing, which `import gradewire` does not need
# (type checkers treat any TYPE_CHECKING name as true).
TYPE_CHECKING = False

# The public names, one line each: from <module> import <Name> as <Name> (gradewire.core._lazy).
if TYPE_CHECKING:
    from gradewire.core import BaseGrader as BaseGrader
    from gradewire.core import CombinedGrader as CombinedGrader
    from gradewire.core import Grade as Grade
    from gradewire.core import GraderFailingError as GraderFailingError
    from gradewire.core import GradeTimeoutError as GradeTimeoutError
    from gradewire.core import GradewireError as GradewireError
    from gradewire.core import GradingError as GradingError
    from gradewire.core import Histogram as Histogram
    from gradewire.core import IgnoreGradeException as IgnoreGradeException
    from gradewire.core import InvalidInputError as InvalidInputError
    from gradewire.core import InvalidTypeError as InvalidTypeError
    from gradewire.core import LogState as LogState
    from gradewire.core import MissingDependencyError as MissingDependencyError
    from gradewire.core import ModelCallError as ModelCallError
    from gradewire.core import OutputParserException as OutputParserException
    from gradewire.core import SinkError as SinkError
    from gradewire.core import StringThread as StringThread
    from gradewire.core import Table as Table
    from gradewire.core import run_sync as run_sync
    from gradewire.eval import compare_runs as compare_runs
    from gradewire.eval import load_run as load_run
    from gradewire.eval import run_eval as run_eval
    from gradewire.helpers import MathGrader as MathGrader
    from gradewire.helpers import contains as contains
    from gradewire.helpers import contains_all as contains_all
    from gradewire.helpers import contains_any as contains_any
    from gradewire.helpers import exact_match as exact_match
    from gradewire.helpers import f1_score as f1_score
    from gradewire.helpers import math_match as math_match
    from gradewire.helpers import normalize as normalize
    from gradewire.helpers import numeric_match as numeric_match
    from gradewire.helpers import pydantic_parse as pydantic_parse
    from gradewire.helpers import render_schema as render_schema
    from gradewire.judges import AnswerRelevancyGrader as AnswerRelevancyGrader
    from gradewire.judges import BinaryJudgeGrader as BinaryJudgeGrader
    from gradewire.judges import BinaryJudgeShot as BinaryJudgeShot
    from gradewire.judges import ContextRelevancyGrader as ContextRelevancyGrader
    from gradewire.judges import FailedJudgeLog as FailedJudgeLog
    from gradewire.judges import FaithfulnessGrader as FaithfulnessGrader
    from gradewire.judges import JudgePanel as JudgePanel
    from gradewire.judges import JudgeShot as JudgeShot
    from gradewire.judges import PairwiseJudgeGrader as PairwiseJudgeGrader
    from gradewire.judges import RangeJudgeGrader as RangeJudgeGrader
    from gradewire.judges import RubricJudgeGrader as RubricJudgeGrader
    from gradewire.judges import SuccessJudgeLog as SuccessJudgeLog
    from gradewire.models import OpenAIChatModel as OpenAIChatModel
    from gradewire.openai import openai_grader as openai_grader
    from gradewire.server import serve as serve
    from gradewire.sinks import BackgroundSink as BackgroundSink
    from gradewire.sinks import ConsoleSink as ConsoleSink
    from gradewire.sinks import FanOutSink as FanOutSink
    from gradewire.sinks import JsonlSink as JsonlSink
    from gradewire.sinks import MemorySink as MemorySink
    from gradewire.specs import build_grader as build_grader
    from gradewire.specs import grader_config as grader_config
    from gradewire.specs import load_graders as load_graders
    from gradewire.stats import agreement as agreement
    from gradewire.tools import CommandGrader as CommandGrader
    from gradewire.tools import EndpointGrader as EndpointGrader
    from gradewire.train import RewardLogger as RewardLogger
    from gradewire.train import openrlhf_reward_func as openrlhf_reward_func

__version__ = "0.1.0"

# The stage packages, reachable as attributes (gw.models.ChatCompletion) without an import.
_STAGES = (
    "core",
    "helpers",
    "http",
    "models",
    "judges",
    "tools",
    "openai",
    "sinks",
    "specs",
    "train",
    "eval",
    "stats",
    "server",
    "hud",
)


def _moved(name: str) -> str | None:
    """Where a name that is not (or no longer) at the root lives, for the error message."""
    note = HUD_NAMES.get(name)
    if note is not None:
        return note
    if name.startswith("_"):
        return None
    for stage in _STAGES:
        if stage == "hud":
            continue  # HUD's names are not gradewire's: the stage packages say so above
        if name in getattr(importlib.import_module(f"gradewire.{stage}"), "__all__", ()):
            return f"it lives in its stage package: from gradewire.{stage} import {name}"
    return None


if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(__name__, moved=_moved, submodules=_STAGES)
