"""LLM judges: graders that ask a chat model for a verdict and log what it cost.

A judge builds a prompt from a sample (the material fenced into tagged sections), asks a
`gradewire.models.ChatModel` for a structured reply (`complete_structured`), turns it into a
`Grade` and logs the tokens and calls it took. `JudgeGrader` is the base to write one;
the binary, range, rubric and RAG judges are built on it. `JudgePanel` folds several
judges' verdicts into one grade; `PairwiseJudgeGrader` says which of two completions is
better, in both orders when asked. Every judge takes the settings of `JudgeSettings`, and
has an ``identity``: one stable string for everything that decides its verdicts
(`identity_facts`). Imports `core`, `helpers`, `models` and `stats`; each name is imported
when first used.
"""

from typing import TYPE_CHECKING

from gradewire.core._lazy import HUD_NAMES, attach

if TYPE_CHECKING:
    from gradewire.judges._binary_judge import BinaryJudgeGrader, BinaryJudgeShot, JudgeShot
    from gradewire.judges._identity import identity_facts
    from gradewire.judges._judge_base import JudgeGrader
    from gradewire.judges._judge_context import JudgedSample
    from gradewire.judges._judge_logs import FailedJudgeLog, SuccessJudgeLog
    from gradewire.judges._judge_panel import JudgePanel
    from gradewire.judges._judge_settings import JudgeSettings
    from gradewire.judges._pairwise_judge import PairwiseJudgeGrader, pair
    from gradewire.judges._rag_judges import (
        AnswerRelevancyGrader,
        ContextRelevancyGrader,
        FaithfulnessGrader,
    )
    from gradewire.judges._range_judge import RangeJudgeGrader
    from gradewire.judges._rubric_judge import RubricJudgeGrader

__all__ = [
    "AnswerRelevancyGrader",
    "BinaryJudgeGrader",
    "BinaryJudgeShot",
    "ContextRelevancyGrader",
    "FailedJudgeLog",
    "FaithfulnessGrader",
    "JudgeGrader",
    "JudgePanel",
    "JudgeSettings",
    "JudgeShot",
    "JudgedSample",
    "PairwiseJudgeGrader",
    "RangeJudgeGrader",
    "RubricJudgeGrader",
    "SuccessJudgeLog",
    "identity_facts",
    "pair",
]

_TO_MODELS = (
    "ChatCompletion",
    "ChatMessage",
    "ChatModel",
    "JudgeCache",
    "OpenAIChatModel",
    "TokenLogprob",
    "TruncatedOutputError",
    "Usage",
    "complete_structured",
)

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(
        __name__,
        {
            "._binary_judge": ["BinaryJudgeGrader", "BinaryJudgeShot", "JudgeShot"],
            "._identity": ["identity_facts"],
            "._judge_base": ["JudgeGrader"],
            "._judge_context": ["JudgedSample"],
            "._judge_logs": ["FailedJudgeLog", "SuccessJudgeLog"],
            "._judge_panel": ["JudgePanel"],
            "._judge_settings": ["JudgeSettings"],
            "._pairwise_judge": ["PairwiseJudgeGrader", "pair"],
            "._rag_judges": [
                "AnswerRelevancyGrader",
                "ContextRelevancyGrader",
                "FaithfulnessGrader",
            ],
            "._range_judge": ["RangeJudgeGrader"],
            "._rubric_judge": ["RubricJudgeGrader"],
        },
        moved={
            "LLMJudgeGrader": HUD_NAMES["LLMJudgeGrader"],
            "render_schema": "it is a helper: from gradewire.helpers import render_schema",
            **{
                name: f"the model client is a stage of its own: from gradewire.models import {name}"
                for name in _TO_MODELS
            },
        },
    )
