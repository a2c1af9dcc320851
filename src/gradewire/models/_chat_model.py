"""The chat model contract that judges call: plug in any model behind one async method."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypedDict, runtime_checkable

__all__ = ["ChatCompletion", "ChatMessage", "ChatModel", "TokenLogprob", "Usage"]


class ChatMessage(TypedDict):
    """One message in OpenAI's chat format."""

    role: str
    content: str


@dataclass(frozen=True)
class Usage:
    """Tokens a call consumed, as the server reported them (0 when it did not)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
        )


@dataclass(frozen=True)
class TokenLogprob:
    """A generated token, its log probability, and the most likely alternatives."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class ChatCompletion:
    """A model's answer.

    Attributes:
        text: The generated message content.
        usage: Tokens consumed by the call.
        logprobs: Per-token log probabilities, when asked for and the server gave them.
        model: The model name the server reported.
        cached: Whether the answer came from a cache instead of the server.
        finish_reason: Why generation stopped, in OpenAI's words (``"stop"``; ``"length"``
            when the reply was cut at the token limit, whatever the provider calls it); None
            when the server did not say.
        fingerprint: The backend configuration the server reported (OpenAI's
            ``system_fingerprint``), or None. With ``model`` it says who answered.
    """

    text: str
    usage: Usage = Usage()
    logprobs: tuple[TokenLogprob, ...] | None = None
    model: str | None = None
    cached: bool = False
    finish_reason: str | None = None
    fingerprint: str | None = None


@runtime_checkable
class ChatModel(Protocol):
    """A chat model a judge can call: one async method, messages in, text out.

    A model may also declare what it can do as a ``profile`` attribute (`ModelProfile`:
    its structured-output dialect, logprobs, its own settings); `complete_structured` reads
    it, and reads a model without one as `profile_of` says. Every client `get_model` makes
    declares one.
    """

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        response_format: Mapping[str, Any] | None = None,
        logprobs: int | None = None,
    ) -> ChatCompletion:
        """Generate one completion.

        Args:
            messages: The conversation, in OpenAI's chat format.
            temperature: Sampling temperature (the server's default when None).
            max_tokens: Upper bound on generated tokens.
            response_format: OpenAI's ``response_format`` (e.g. a JSON schema); a model
                that cannot honour it may ignore it.
            logprobs: Number of top alternatives per token to return, or None for none.
        """
        ...
