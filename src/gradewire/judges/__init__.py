"""LLM judges: the `ChatModel` protocol, `OpenAIChatModel`, and the judge graders.

A judge grader builds a prompt from a sample, asks a `ChatModel` for a structured reply
(`complete_structured`), parses it and logs what the call cost. Imports `core`, `helpers`
and `http`.
"""

from gradewire.judges._binary_judge import BinaryJudgeGrader, JudgeShot
from gradewire.judges._chat_model import ChatCompletion, ChatMessage, ChatModel, TokenLogprob, Usage
from gradewire.judges._judge_base import JudgeGrader
from gradewire.judges._judge_cache import JudgeCache
from gradewire.judges._judge_context import JudgedSample
from gradewire.judges._judge_logs import FailedJudgeLog, SuccessJudgeLog
from gradewire.judges._openai_chat import OpenAIChatModel
from gradewire.judges._rag_judges import (
    AnswerRelevancyGrader,
    ContextRelevancyGrader,
    FaithfulnessGrader,
)
from gradewire.judges._range_judge import RangeJudgeGrader
from gradewire.judges._rubric_judge import LLMJudgeGrader
from gradewire.judges._structured_call import complete_structured
from gradewire.judges._truncated import TruncatedOutputError

__all__ = [
    "AnswerRelevancyGrader",
    "BinaryJudgeGrader",
    "ChatCompletion",
    "ChatMessage",
    "ChatModel",
    "ContextRelevancyGrader",
    "FailedJudgeLog",
    "FaithfulnessGrader",
    "JudgeCache",
    "JudgeGrader",
    "JudgeShot",
    "JudgedSample",
    "LLMJudgeGrader",
    "OpenAIChatModel",
    "RangeJudgeGrader",
    "SuccessJudgeLog",
    "TokenLogprob",
    "TruncatedOutputError",
    "Usage",
    "complete_structured",
]
