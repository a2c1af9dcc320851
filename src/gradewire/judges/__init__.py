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

from gradewire.core._lazy import HUD_NAMES, attach

TYPE_CHECKING = False  # typing's, without importing typing: type checkers take it as true

# The public names, one line each: from <module> import <Name> as <Name> (gradewire.core._lazy).
if TYPE_CHECKING:
    from gradewire.judges._binary_judge import BinaryJudgeGrader as BinaryJudgeGrader
    from gradewire.judges._binary_judge import BinaryJudgeShot as BinaryJudgeShot
    from gradewire.judges._binary_judge import JudgeShot as JudgeShot
    from gradewire.judges._identity import identity_facts as identity_facts
    from gradewire.judges._judge_base import JudgeGrader as JudgeGrader
    from gradewire.judges._judge_context import JudgedSample as JudgedSample
    from gradewire.judges._judge_logs import FailedJudgeLog as FailedJudgeLog
    from gradewire.judges._judge_logs import SuccessJudgeLog as SuccessJudgeLog
    from gradewire.judges._judge_panel import JudgePanel as JudgePanel
    from gradewire.judges._judge_settings import JudgeSettings as JudgeSettings
    from gradewire.judges._pairwise_judge import PairwiseJudgeGrader as PairwiseJudgeGrader
    from gradewire.judges._pairwise_judge import pair as pair
    from gradewire.judges._rag_judges import AnswerRelevancyGrader as AnswerRelevancyGrader
    from gradewire.judges._rag_judges import ContextRelevancyGrader as ContextRelevancyGrader
    from gradewire.judges._rag_judges import FaithfulnessGrader as FaithfulnessGrader
    from gradewire.judges._range_judge import RangeJudgeGrader as RangeJudgeGrader
    from gradewire.judges._rubric_judge import RubricJudgeGrader as RubricJudgeGrader

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
        moved={
            "LLMJudgeGrader": HUD_NAMES["LLMJudgeGrader"],
            "render_schema": "it is a helper: from gradewire.helpers import render_schema",
            **{
                name: f"the model client is a stage of its own: from gradewire.models import {name}"
                for name in _TO_MODELS
            },
        },
    )
