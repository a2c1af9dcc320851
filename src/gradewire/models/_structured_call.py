"""complete_structured: ask a chat model for JSON matching a pydantic model, and get it parsed.

How the schema reaches the model is what the model's profile (`ModelProfile`) declares: the
structured-output dialect of its endpoint (``structured_output``, found by ``"auto"``), as a
constraint the server enforces, or, for servers without one (``"prompt"``), as one example
answer in the prompt.
A reply cut at the token limit is a `TruncatedOutputError` (unless ``truncation="parse"``);
one that does not parse gets one repair request, saying in a line what was wrong, at a
temperature that lets the model write something else; a second failure is an
`OutputParserException`, which graders count as an error.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from typing import Literal, TypeVar

from pydantic import BaseModel
from typing_extensions import Unpack

from gradewire.core._errors import (
    InvalidTypeError,
    ModelCallError,
    OutputParserException,
)
from gradewire.helpers._structured import pydantic_parse
from gradewire.models._chat_model import ChatCompletion, ChatMessage, ChatModel, Usage
from gradewire.models._model_settings import StructuredSettings, check_settings
from gradewire.models._negotiation import StructuredOutputRefusedError
from gradewire.models._profile import ModelProfile, profile_of, remember_prompt_mode
from gradewire.models._response_format import json_schema_response_format
from gradewire.models._structured_prompt import instruction_for, repair_request, with_instruction
from gradewire.models._truncated import TruncatedOutputError

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_TEMPERATURE",
    "REPAIR_TEMPERATURE",
    "complete_structured",
    "structured_call",
]

logger = logging.getLogger("gradewire")

M = TypeVar("M", bound=BaseModel)

DEFAULT_MAX_TOKENS = 1024
"""The reply bound of a structured call when neither the call nor the model sets one.

A judge's reasoning and verdict take 20-300 tokens; a RAG judge's list of one verdict with
reasoning per item about 40 an item, so 1,024 holds twenty items. Without a bound a small
model that loops runs to the end of its context (2,011 tokens, 39 s seen on a 135M model).
Reasoning models that think before answering need more: raise ``max_tokens``.
"""

DEFAULT_TEMPERATURE = 0.0
"""The temperature of a structured call when neither the call nor the model sets one.

A verdict should not change when the same sample is judged twice.
"""

# Dialects a model can move through in one call (json_schema -> ... -> prompt).
_MAX_DIALECT_CHANGES = 4

REPAIR_TEMPERATURE = 0.7
"""The lowest temperature of a repair request: at 0 a model tends to write the same reply."""


async def complete_structured(
    model: ChatModel,
    messages: Sequence[ChatMessage],
    schema: type[M],
    *,
    logprobs: int | None = None,
    **settings: Unpack[StructuredSettings],
) -> tuple[M, ChatCompletion]:
    """Ask ``model`` for an answer matching ``schema`` and return it parsed.

    Args:
        model: Any `ChatModel`. Its ``profile`` (`ModelProfile`) says how: a gradewire
            client sends the schema in its endpoint's structured-output dialect
            (``structured_output``); on a ``"prompt"`` endpoint the prompt shows one example
            answer instead. A model without a profile gets OpenAI's ``response_format``; if
            it refuses it (an error naming ``response_format``), the prompt is used (see
            `profile_of`).
        messages: The conversation; the format instruction is added to a copy.
        schema: The pydantic model the answer must match.
        logprobs: Top alternatives per token to ask for (the last call's are returned).
        **settings: The call's `StructuredSettings`: ``temperature`` and ``max_tokens``
            (unset: the model's own, else `DEFAULT_TEMPERATURE` and `DEFAULT_MAX_TOKENS`)
            and ``truncation``.

    Returns:
        The parsed answer, and the last completion with ``usage`` summed over every call
        made (``cached`` only if every call was answered from a cache).

    Raises:
        TruncatedOutputError: The reply was cut at the token limit (``truncation="error"``).
        OutputParserException: The answer did not match ``schema``, even after one repair
            request; ``llm_output`` holds the last answer.
        ModelCallError: A call failed for good.

    Example:
        >>> class Verdict(BaseModel):
        ...     reasoning: str
        ...     verdict: Literal["PASS", "FAIL"]
        >>> verdict, answer = await complete_structured(judge, messages, Verdict)  # doctest: +SKIP
    """
    checked = check_settings(settings, StructuredSettings, "complete_structured()")
    return await structured_call(
        model,
        messages,
        schema,
        temperature=checked.get("temperature"),
        max_tokens=checked.get("max_tokens"),
        logprobs=logprobs,
        truncation=checked.get("truncation", "error"),
    )


async def structured_call(
    model: ChatModel,
    messages: Sequence[ChatMessage],
    schema: type[M],
    *,
    temperature: float | None,
    max_tokens: int | None,
    logprobs: int | None,
    truncation: Literal["error", "parse"],
) -> tuple[M, ChatCompletion]:
    """`complete_structured` with settings already checked (a judge checks them once)."""
    if not (isinstance(schema, type) and issubclass(schema, BaseModel)):
        raise InvalidTypeError(
            f"complete_structured() needs a pydantic BaseModel subclass as schema, got {schema!r}"
        )
    profile = profile_of(model)
    # The levels of ModelSettings: the call's, else the model's own, else this default.
    if temperature is None:
        temperature = profile.settings.get("temperature")
        if temperature is None:
            temperature = DEFAULT_TEMPERATURE
    if max_tokens is None:
        max_tokens = profile.settings.get("max_tokens")
        if max_tokens is None:
            max_tokens = DEFAULT_MAX_TOKENS
    response_format = json_schema_response_format(schema)
    instruction = instruction_for(schema)
    dialect = profile.dialect
    prompt_mode = response_format is None or dialect == "prompt"
    calls: list[ChatCompletion] = []

    async def ask(conversation: Sequence[ChatMessage], repair: bool = False) -> ChatCompletion:
        heat = max(temperature, REPAIR_TEMPERATURE) if repair else temperature
        completion = await model.complete(
            conversation,
            temperature=heat,
            max_tokens=max_tokens,
            response_format=None if prompt_mode else response_format,
            logprobs=logprobs,
        )
        calls.append(completion)
        if completion.finish_reason == "length" and truncation == "error":
            raise TruncatedOutputError.of(
                completion.text, completion.usage.completion_tokens, max_tokens
            )
        return completion

    def conversation_for_mode() -> list[ChatMessage]:
        # A dialect a server may ignore silently (guided_json) shows the example too.
        if prompt_mode or profile.shows_example(dialect):
            return with_instruction(messages, instruction)
        return list(messages)

    conversation = conversation_for_mode()
    for _ in range(_MAX_DIALECT_CHANGES):
        try:
            completion = await ask(conversation)
            break
        except StructuredOutputRefusedError:
            # The model moved to a dialect whose prompt shows the example answer.
            profile = profile_of(model)
            dialect = profile.dialect
            prompt_mode = dialect == "prompt"
        except ModelCallError as exc:
            if prompt_mode or not _refuses_response_format(profile, exc):
                raise
            _remember_prompt_mode(model, exc)
            dialect, prompt_mode = "prompt", True
        conversation = conversation_for_mode()
    else:  # pragma: no cover - a model that keeps changing its dialect
        completion = await ask(conversation)

    try:
        parsed = pydantic_parse(completion.text, schema)
    except OutputParserException as first:
        repair = repair_request(
            conversation, completion.text, first.message, instruction if prompt_mode else None
        )
        completion = await ask(repair, repair=True)
        try:
            parsed = pydantic_parse(completion.text, schema)
        except OutputParserException as second:
            raise OutputParserException(
                f"the answer did not match {schema.__name__} even after one repair request: "
                f"{second.message}",
                llm_output=completion.text,
            ) from second

    if len(calls) == 1:
        return parsed, completion  # its usage and cached are already the sums
    usage = sum((call.usage for call in calls), Usage())
    cached = all(call.cached for call in calls)
    return parsed, dataclasses.replace(completion, usage=usage, cached=cached)


def _refuses_response_format(profile: ModelProfile, exc: ModelCallError) -> bool:
    if profile.negotiates or profile.dialect is not None:
        # A model that finds its dialect itself says so; one said to take a JSON schema
        # that refuses it is an error to see, not to work around.
        return False
    parameter = getattr(exc, "parameter", None)
    if parameter is not None:
        return parameter in ("response_format", "json_schema")
    status = getattr(exc, "status", None)
    if status is not None and not (status in (400, 422) or status >= 500):
        return False
    # The server's own words: gradewire's advice text mentions response_format on any 400.
    said = (getattr(exc, "server_message", None) or "").lower()
    return "response_format" in said or "json_schema" in said


def _remember_prompt_mode(model: ChatModel, exc: ModelCallError) -> None:
    remember_prompt_mode(model)
    logger.info(
        "gradewire: %r refused a JSON-schema response_format (%s); an example answer goes "
        "in the prompt instead",
        model,
        getattr(exc, "server_message", None) or exc,
    )
