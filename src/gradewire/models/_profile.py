"""A model's declared capabilities: how it takes a JSON schema, logprobs, its own settings.

`complete_structured` (hence every judge) asks a model's profile what to do, instead of
probing attributes: which structured-output dialect the next call uses (and whether the
prompt must show an example answer), whether the model finds its dialect itself, whether it
can return logprobs, and the settings it samples with unless a call sets its own. Every
`ModelClient` (`OpenAIChatModel`, `AnthropicModel`) declares one as its ``profile``; a
`ChatModel` of your own may too. One without a profile is read the older way (see
`profile_of`).
"""

from __future__ import annotations

import contextlib
import weakref
from dataclasses import dataclass, field
from typing import Any

from gradewire.models._model_settings import ModelSettings

__all__ = ["ModelProfile", "profile_of", "remember_prompt_mode"]


@dataclass(frozen=True)
class ModelProfile:
    """What a chat model declares about itself.

    Attributes:
        provider: The provider's name (``"openai"``, ``"anthropic"``; ``"custom"`` for a
            model of your own).
        dialects: The structured-output dialects it can be asked in, strongest first;
            empty when it takes OpenAI's ``response_format`` as it is (or ignores it).
        dialect: The dialect the next structured call is sent in; None while unknown (a
            negotiating model starts with its strongest; any other model gets OpenAI's
            ``response_format`` and, if it refuses it by name, the prompt instead).
        negotiates: Whether the model finds its dialect itself, moving to the next on a
            refusal (`StructuredOutputRefusedError` tells the caller to re-prompt). A model
            that does not, with ``dialect`` set, never has it changed: a refusal is an error.
        prompted: The dialects whose prompt must show an example answer.
        logprobs: Whether it can return per-token log probabilities (now: a server that
            refused them is asked without them).
        settings: Its own `ModelSettings`, for every call that does not set its own.
        takes: The `ModelSettings` its API takes; a call's others are not sent (Anthropic's
            Messages API takes no temperature).
        defaults: What a request carries when neither the call, the caller nor the model
            sets it (an API that requires ``max_tokens``); empty when the server decides.
    """

    provider: str = "custom"
    dialects: tuple[str, ...] = ()
    dialect: str | None = None
    negotiates: bool = False
    prompted: frozenset[str] = frozenset({"prompt"})
    logprobs: bool = True
    settings: ModelSettings = field(default_factory=lambda: ModelSettings(), hash=False)
    takes: frozenset[str] = frozenset({"temperature", "max_tokens"})
    defaults: ModelSettings = field(default_factory=lambda: ModelSettings(), hash=False)

    def shows_example(self, dialect: str | None) -> bool:
        """Whether a structured call in ``dialect`` shows an example answer in its prompt."""
        return dialect in self.prompted


# Models without a profile that refused a JSON-schema response_format: asked in the prompt
# from then on. Kept here, never written on the model object.
_prompt_only: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()


def profile_of(model: object) -> ModelProfile:
    """The profile ``model`` declares, or the one read from a model that declares none.

    A model without a ``profile`` (a `ChatModel` of your own) is read as gradewire read
    models before profiles: its ``json_schema`` attribute (True: it takes a JSON-schema
    ``response_format`` and a refusal is an error; False: the prompt shows an example;
    absent or None: tried, and the prompt used after a refusal that names it), and its
    ``temperature`` and ``max_tokens`` attributes as its own settings.
    """
    declared = getattr(model, "profile", None)
    if isinstance(declared, ModelProfile):
        return declared
    said = getattr(model, "json_schema", None)
    learnt = _learnt(model)
    dialect = "prompt" if said is False or learnt else "json_schema" if said is True else None
    settings = ModelSettings()
    temperature = getattr(model, "temperature", None)
    if isinstance(temperature, (int, float)) and not isinstance(temperature, bool):
        settings["temperature"] = float(temperature)
    max_tokens = getattr(model, "max_tokens", None)
    if isinstance(max_tokens, int) and not isinstance(max_tokens, bool):
        settings["max_tokens"] = max_tokens
    return ModelProfile(dialect=dialect, settings=settings)


def remember_prompt_mode(model: object) -> None:
    """Ask ``model`` (one without a profile) in the prompt from now on.

    A model that cannot be weakly referenced is not remembered: it is asked with the schema
    again, and falls back again, on each call.
    """
    with contextlib.suppress(TypeError):
        _prompt_only[model] = True


def _learnt(model: object) -> bool:
    try:
        return _prompt_only.get(model, False)
    except TypeError:
        return False
