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

if TYPE_CHECKING:
    from gradewire.core import (
        BaseGrader,
        CombinedGrader,
        Grade,
        GraderFailingError,
        GradeTimeoutError,
        GradewireError,
        GradingError,
        Histogram,
        IgnoreGradeException,
        InvalidInputError,
        InvalidTypeError,
        LogState,
        MissingDependencyError,
        ModelCallError,
        OutputParserException,
        SinkError,
        StringThread,
        Table,
        run_sync,
    )
    from gradewire.eval import compare_runs, load_run, run_eval
    from gradewire.helpers import (
        MathGrader,
        contains,
        contains_all,
        contains_any,
        exact_match,
        f1_score,
        math_match,
        normalize,
        numeric_match,
        pydantic_parse,
        render_schema,
    )
    from gradewire.judges import (
        AnswerRelevancyGrader,
        BinaryJudgeGrader,
        BinaryJudgeShot,
        ContextRelevancyGrader,
        FailedJudgeLog,
        FaithfulnessGrader,
        JudgePanel,
        JudgeShot,
        PairwiseJudgeGrader,
        RangeJudgeGrader,
        RubricJudgeGrader,
        SuccessJudgeLog,
    )
    from gradewire.models import OpenAIChatModel
    from gradewire.openai import openai_grader
    from gradewire.server import serve
    from gradewire.sinks import BackgroundSink, ConsoleSink, FanOutSink, JsonlSink, MemorySink
    from gradewire.specs import build_grader, grader_config, load_graders
    from gradewire.stats import agreement
    from gradewire.tools import CommandGrader, EndpointGrader
    from gradewire.train import RewardLogger, openrlhf_reward_func

__version__ = "0.1.0"

__all__ = [
    "AnswerRelevancyGrader",
    "BackgroundSink",
    "BaseGrader",
    "BinaryJudgeGrader",
    "BinaryJudgeShot",
    "CombinedGrader",
    "CommandGrader",
    "ConsoleSink",
    "ContextRelevancyGrader",
    "EndpointGrader",
    "FailedJudgeLog",
    "FaithfulnessGrader",
    "FanOutSink",
    "Grade",
    "GradeTimeoutError",
    "GraderFailingError",
    "GradewireError",
    "GradingError",
    "Histogram",
    "IgnoreGradeException",
    "InvalidInputError",
    "InvalidTypeError",
    "JsonlSink",
    "JudgePanel",
    "JudgeShot",
    "LogState",
    "MathGrader",
    "MemorySink",
    "MissingDependencyError",
    "ModelCallError",
    "OpenAIChatModel",
    "OutputParserException",
    "PairwiseJudgeGrader",
    "RangeJudgeGrader",
    "RewardLogger",
    "RubricJudgeGrader",
    "SinkError",
    "StringThread",
    "SuccessJudgeLog",
    "Table",
    "__version__",
    "agreement",
    "build_grader",
    "compare_runs",
    "contains",
    "contains_all",
    "contains_any",
    "exact_match",
    "f1_score",
    "grader_config",
    "load_graders",
    "load_run",
    "math_match",
    "normalize",
    "numeric_match",
    "openai_grader",
    "openrlhf_reward_func",
    "pydantic_parse",
    "render_schema",
    "run_eval",
    "run_sync",
    "serve",
]

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
    __getattr__, __dir__ = attach(
        __name__,
        {
            "gradewire.core": [
                "BaseGrader",
                "CombinedGrader",
                "Grade",
                "GradeTimeoutError",
                "GraderFailingError",
                "GradewireError",
                "GradingError",
                "Histogram",
                "IgnoreGradeException",
                "InvalidInputError",
                "InvalidTypeError",
                "LogState",
                "MissingDependencyError",
                "ModelCallError",
                "OutputParserException",
                "SinkError",
                "StringThread",
                "Table",
                "run_sync",
            ],
            "gradewire.eval": ["compare_runs", "load_run", "run_eval"],
            "gradewire.helpers": [
                "contains",
                "contains_all",
                "contains_any",
                "MathGrader",
                "exact_match",
                "f1_score",
                "math_match",
                "normalize",
                "numeric_match",
                "pydantic_parse",
                "render_schema",
            ],
            "gradewire.judges": [
                "AnswerRelevancyGrader",
                "BinaryJudgeGrader",
                "BinaryJudgeShot",
                "ContextRelevancyGrader",
                "FailedJudgeLog",
                "FaithfulnessGrader",
                "JudgePanel",
                "JudgeShot",
                "PairwiseJudgeGrader",
                "RangeJudgeGrader",
                "RubricJudgeGrader",
                "SuccessJudgeLog",
            ],
            "gradewire.models": ["OpenAIChatModel"],
            "gradewire.openai": ["openai_grader"],
            "gradewire.server": ["serve"],
            "gradewire.sinks": [
                "BackgroundSink",
                "ConsoleSink",
                "FanOutSink",
                "JsonlSink",
                "MemorySink",
            ],
            "gradewire.specs": ["build_grader", "grader_config", "load_graders"],
            "gradewire.stats": ["agreement"],
            "gradewire.tools": ["CommandGrader", "EndpointGrader"],
            "gradewire.train": ["RewardLogger", "openrlhf_reward_func"],
        },
        moved=_moved,
        submodules=_STAGES,
    )
