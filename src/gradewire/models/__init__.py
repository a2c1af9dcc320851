"""Chat models: the `ChatModel` protocol, `OpenAIChatModel`, and structured calls.

What every grader that calls a model shares, below the judges: the protocol and its
message, completion, usage and logprob types; `OpenAIChatModel` for any OpenAI-compatible
server (its request wire format, retries through `http`, the structured-output dialect of
each endpoint, negotiated and remembered); `complete_structured`, which asks for JSON that
matches a pydantic model and parses it (`TruncatedOutputError` when the reply was cut); the
sqlite `JudgeCache`; identical calls in flight sent once; and `ModelSettings`, the
per-call settings (temperature, max_tokens) with their precedence. Imports `core`,
`helpers` and `http`; each name is imported when first used.
"""

from typing import TYPE_CHECKING

from gradewire.core._lazy import attach

if TYPE_CHECKING:
    from gradewire.models._chat_model import (
        ChatCompletion,
        ChatMessage,
        ChatModel,
        TokenLogprob,
        Usage,
    )
    from gradewire.models._judge_cache import JudgeCache
    from gradewire.models._model_settings import ModelSettings, StructuredSettings
    from gradewire.models._openai_chat import OpenAIChatModel
    from gradewire.models._structured_call import complete_structured
    from gradewire.models._truncated import TruncatedOutputError

__all__ = [
    "ChatCompletion",
    "ChatMessage",
    "ChatModel",
    "JudgeCache",
    "ModelSettings",
    "OpenAIChatModel",
    "StructuredSettings",
    "TokenLogprob",
    "TruncatedOutputError",
    "Usage",
    "complete_structured",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(
        __name__,
        {
            "._chat_model": ["ChatCompletion", "ChatMessage", "ChatModel", "TokenLogprob", "Usage"],
            "._judge_cache": ["JudgeCache"],
            "._model_settings": ["ModelSettings", "StructuredSettings"],
            "._openai_chat": ["OpenAIChatModel"],
            "._structured_call": ["complete_structured"],
            "._truncated": ["TruncatedOutputError"],
        },
    )
