"""Chat models: one factory, a provider-neutral client core, providers as adapters.

What every grader that calls a model shares, below the judges: the `ChatModel` protocol and
its message, completion, usage and logprob types; `get_model("provider/name")`, which makes
any provider's client; `ModelClient`, their shared core (connections per event loop, one
concurrency limit per endpoint, identical calls in flight sent once, the sqlite
`JudgeCache`, retries, `ModelUsage` with the `ServedModel` each answer reported, pickling);
`OpenAIChatModel` for any OpenAI-compatible server and `AnthropicModel` for Anthropic's
Messages API, each a small wire-format adapter; the `ModelProfile` a model declares (its
structured-output dialects, negotiated and remembered per endpoint; logprobs; settings);
`complete_structured`, which asks for JSON that matches a pydantic model and parses it
(`TruncatedOutputError` when the reply was cut); and `ModelSettings`, the per-call settings
(temperature, max_tokens) with their precedence. Imports `core`, `helpers` and `http`; each
name is imported when first used.
"""

from typing import TYPE_CHECKING

from gradewire.core._lazy import attach

if TYPE_CHECKING:
    from gradewire.models._anthropic import AnthropicModel
    from gradewire.models._chat_model import (
        ChatCompletion,
        ChatMessage,
        ChatModel,
        TokenLogprob,
        Usage,
    )
    from gradewire.models._client import ModelClient
    from gradewire.models._get_model import get_model
    from gradewire.models._judge_cache import JudgeCache
    from gradewire.models._model_settings import ModelSettings, StructuredSettings
    from gradewire.models._model_usage import ModelUsage, ServedModel
    from gradewire.models._openai_chat import OpenAIChatModel
    from gradewire.models._profile import ModelProfile
    from gradewire.models._structured_call import complete_structured
    from gradewire.models._truncated import TruncatedOutputError

__all__ = [
    "AnthropicModel",
    "ChatCompletion",
    "ChatMessage",
    "ChatModel",
    "JudgeCache",
    "ModelClient",
    "ModelProfile",
    "ModelSettings",
    "ModelUsage",
    "OpenAIChatModel",
    "ServedModel",
    "StructuredSettings",
    "TokenLogprob",
    "TruncatedOutputError",
    "Usage",
    "complete_structured",
    "get_model",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(
        __name__,
        {
            "._anthropic": ["AnthropicModel"],
            "._chat_model": ["ChatCompletion", "ChatMessage", "ChatModel", "TokenLogprob", "Usage"],
            "._client": ["ModelClient"],
            "._get_model": ["get_model"],
            "._judge_cache": ["JudgeCache"],
            "._model_settings": ["ModelSettings", "StructuredSettings"],
            "._model_usage": ["ModelUsage", "ServedModel"],
            "._openai_chat": ["OpenAIChatModel"],
            "._profile": ["ModelProfile"],
            "._structured_call": ["complete_structured"],
            "._truncated": ["TruncatedOutputError"],
        },
    )
