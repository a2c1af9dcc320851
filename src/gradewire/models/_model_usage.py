"""What a model's answers said about who answered, and what they cost, tallied per model.

Every answer a `ModelClient` returns (from the server, the cache or a shared call) is
counted here, in one place: tokens, calls, and the served identity each answer reported
(the model name, and OpenAI's ``system_fingerprint``), so a change of the model behind a
judge shows up as a second identity.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from gradewire.models._chat_model import ChatCompletion

__all__ = ["ModelUsage", "ServedModel", "UsageTally"]


@dataclass(frozen=True)
class ServedModel:
    """Who answered a call, as the answer said.

    Attributes:
        model: The model name the server reported (a dated snapshot on OpenAI's and
            Anthropic's APIs), or None when it reported none.
        fingerprint: The backend configuration it reported (OpenAI's
            ``system_fingerprint``), or None (Anthropic reports none).
    """

    model: str | None
    fingerprint: str | None = None


@dataclass(frozen=True)
class ModelUsage:
    """A model's answers so far (a snapshot: `ModelClient.usage` makes a new one).

    Attributes:
        calls: Answers returned, from the server, the cache or a shared call.
        cached_calls: Those that were not paid for now (``cached=True``).
        prompt_tokens: Prompt tokens the answers reported.
        completion_tokens: Completion tokens the answers reported.
        served: Each served identity the answers reported, with how many reported it.
    """

    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    served: dict[ServedModel, int] = field(default_factory=dict)


class UsageTally:
    """The running counts behind `ModelUsage` (a model may answer on several threads)."""

    __slots__ = ("_cached", "_calls", "_completion", "_lock", "_prompt", "_served")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls = self._cached = self._prompt = self._completion = 0
        self._served: dict[ServedModel, int] = {}

    def record(self, completion: ChatCompletion) -> None:
        """Count one answer."""
        served = ServedModel(completion.model, completion.fingerprint)
        usage = completion.usage
        with self._lock:
            self._calls += 1
            self._cached += completion.cached
            self._prompt += usage.prompt_tokens
            self._completion += usage.completion_tokens
            self._served[served] = self._served.get(served, 0) + 1

    def snapshot(self) -> ModelUsage:
        """The counts so far."""
        with self._lock:
            return ModelUsage(
                self._calls, self._cached, self._prompt, self._completion, dict(self._served)
            )
