"""Adaptive Harmony's grader names, from its modules or from gradewire (see `compat_targets`)."""

from __future__ import annotations

from compat_targets import REAL

if REAL:
    from adaptive_harmony import Grade, StringThread
    from adaptive_harmony.core.structured_output import (
        OutputParserException,
        pydantic_parse,
        render_schema,
    )
    from adaptive_harmony.graders import (
        BaseGrader,
        BinaryJudgeGrader,
        FaithfulnessGrader,
        IgnoreGradeException,
    )
    from adaptive_harmony.graders.binary_judge import BinaryJudgeShot
    from adaptive_harmony.graders.combined_grader import CombinedGrader
    from adaptive_harmony.graders.utils import FailedJudgeLog, SuccessJudgeLog
    from adaptive_harmony.logging_table import Table

    ChatCompletion = None  # Adaptive Harmony's judges call generate_and_validate instead
else:
    from gradewire import (
        BaseGrader,
        BinaryJudgeGrader,
        BinaryJudgeShot,
        CombinedGrader,
        FailedJudgeLog,
        FaithfulnessGrader,
        Grade,
        IgnoreGradeException,
        OutputParserException,
        StringThread,
        SuccessJudgeLog,
        Table,
        pydantic_parse,
        render_schema,
    )
    from gradewire.models import ChatCompletion

__all__ = [
    "BaseGrader",
    "BinaryJudgeGrader",
    "BinaryJudgeShot",
    "ChatCompletion",
    "CombinedGrader",
    "FailedJudgeLog",
    "FaithfulnessGrader",
    "Grade",
    "IgnoreGradeException",
    "OutputParserException",
    "StringThread",
    "SuccessJudgeLog",
    "Table",
    "pydantic_parse",
    "render_schema",
]
