"""complete_structured: ask a chat model for JSON matching a pydantic model, and get it parsed.

The schema travels as a JSON-schema ``response_format`` when the server is known to honour it
(or not known not to); a server that answers 400 about ``response_format`` is remembered as
not supporting it (``model.json_schema = False``) and the question is asked again with the
schema in the prompt. An answer that does not parse gets one repair request (the answer, the
parse error and the schema go back to the model); a second failure is an
`OutputParserException`, which graders count as a parse error.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import logging
import re
from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from gradewire.core._errors import InvalidTypeError, ModelCallError, OutputParserException
from gradewire.helpers._structured import pydantic_parse
from gradewire.judges._chat_model import ChatCompletion, ChatMessage, ChatModel, Usage

__all__ = ["complete_structured", "json_schema_response_format"]

logger = logging.getLogger("gradewire")

M = TypeVar("M", bound=BaseModel)


async def complete_structured(
    model: ChatModel,
    messages: Sequence[ChatMessage],
    schema: type[M],
    *,
    temperature: float | None = None,
    max_tokens: int | None = None,
    logprobs: int | None = None,
) -> tuple[M, ChatCompletion]:
    """Ask ``model`` for an answer matching ``schema`` and return it parsed.

    Args:
        model: Any `ChatModel`. Its ``json_schema`` attribute, when it has one
            (`OpenAIChatModel` does), says whether the server honours JSON-schema
            ``response_format``: True sends it, False puts the schema in the prompt, None
            tries it and falls back (setting False) if the server rejects it.
        messages: The conversation; the schema instructions are added to a copy.
        schema: The pydantic model the answer must match.
        temperature: Sampling temperature, passed to the model.
        max_tokens: Bound on generated tokens, passed to the model.
        logprobs: Top alternatives per token to ask for (the last call's are returned).

    Returns:
        The parsed answer, and the last completion with ``usage`` summed over every call
        made (``cached`` only if every call was answered from a cache).

    Raises:
        OutputParserException: The answer did not match ``schema``, even after one repair
            request; ``llm_output`` holds the last answer.
        ModelCallError: A call failed for good.

    Example:
        >>> class Verdict(BaseModel):
        ...     reasoning: str
        ...     verdict: Literal["PASS", "FAIL"]
        >>> verdict, answer = await complete_structured(judge, messages, Verdict)  # doctest: +SKIP
    """
    if not (isinstance(schema, type) and issubclass(schema, BaseModel)):
        raise InvalidTypeError(
            f"complete_structured() needs a pydantic BaseModel subclass as schema, got {schema!r}"
        )
    schema_text = json.dumps(schema.model_json_schema(), ensure_ascii=False)
    response_format = json_schema_response_format(schema)
    mode = getattr(model, "json_schema", None)
    use_format = response_format is not None and mode is not False
    calls: list[ChatCompletion] = []

    async def ask(conversation: Sequence[ChatMessage], with_format: bool) -> ChatCompletion:
        completion = await model.complete(
            conversation,
            temperature=temperature,
            max_tokens=max_tokens,
            response_format=response_format if with_format else None,
            logprobs=logprobs,
        )
        calls.append(completion)
        return completion

    conversation = list(messages) if use_format else _with_schema(messages, schema_text)
    try:
        completion = await ask(conversation, use_format)
    except ModelCallError as exc:
        if not (use_format and mode is None and _rejects_response_format(exc)):
            raise
        _remember_no_json_schema(model, exc)
        use_format = False
        conversation = _with_schema(messages, schema_text)
        completion = await ask(conversation, use_format)

    try:
        parsed = pydantic_parse(completion.text, schema)
    except OutputParserException as first:
        repair: list[ChatMessage] = [
            *conversation,
            {"role": "assistant", "content": completion.text},
            {
                "role": "user",
                "content": (
                    f"That answer could not be used: {first.message}. Reply with only the "
                    f"corrected JSON object, matching this JSON schema:\n{schema_text}"
                ),
            },
        ]
        completion = await ask(repair, use_format)
        try:
            parsed = pydantic_parse(completion.text, schema)
        except OutputParserException as second:
            raise OutputParserException(
                f"the answer did not match {schema.__name__} even after one repair request: "
                f"{second.message}",
                llm_output=completion.text,
            ) from second

    usage = sum((call.usage for call in calls), Usage())
    cached = all(call.cached for call in calls)
    return parsed, dataclasses.replace(completion, usage=usage, cached=cached)


def json_schema_response_format(schema: type[BaseModel]) -> dict[str, Any] | None:
    """OpenAI's JSON-schema ``response_format`` for ``schema``; None if its root is no object.

    Every object gets ``additionalProperties: false``; ``strict`` is set only when every
    property of every object is required, as strict mode demands.
    """
    raw = copy.deepcopy(schema.model_json_schema())
    if raw.get("type") != "object":
        return None  # OpenAI wants an object at the root: such schemas go in the prompt
    strict = _close_objects(raw)
    name = re.sub(r"[^a-zA-Z0-9_-]", "_", schema.__name__)[:64] or "answer"
    return {"type": "json_schema", "json_schema": {"name": name, "schema": raw, "strict": strict}}


def _close_objects(node: Any) -> bool:
    """Close every object schema in ``node``; True if every object requires all properties."""
    all_required = True
    if isinstance(node, dict):
        properties = node.get("properties")
        if node.get("type") == "object" and isinstance(properties, dict):
            node.setdefault("additionalProperties", False)
            if set(node.get("required", ())) != set(properties):
                all_required = False
        for value in node.values():
            all_required = _close_objects(value) and all_required
    elif isinstance(node, list):
        for value in node:
            all_required = _close_objects(value) and all_required
    return all_required


def _with_schema(messages: Sequence[ChatMessage], schema_text: str) -> list[ChatMessage]:
    instruction = (
        "Answer with only a JSON object, and no other text, matching this JSON schema:\n"
        + schema_text
    )
    conversation = list(messages)
    last = conversation[-1] if conversation else None
    if last is not None and last.get("role") == "user" and isinstance(last.get("content"), str):
        # Appended to the last user turn: some chat templates refuse two user turns in a row.
        conversation[-1] = {**last, "content": f"{last['content']}\n\n{instruction}"}
    else:
        conversation.append({"role": "user", "content": instruction})
    return conversation


def _rejects_response_format(exc: ModelCallError) -> bool:
    status = getattr(exc, "status", None)
    if status is not None and status not in (400, 422):
        return False
    # The server's own words: gradewire's advice text mentions response_format on any 400.
    said = getattr(exc, "server_message", None) or str(exc)
    said = said.lower()
    return "response_format" in said or "json_schema" in said


def _remember_no_json_schema(model: ChatModel, exc: ModelCallError) -> None:
    if hasattr(model, "json_schema"):
        # A read-only attribute stays as it is: the fallback then happens on every call.
        with contextlib.suppress(AttributeError):
            setattr(model, "json_schema", False)  # noqa: B010 - not in the ChatModel protocol
    logger.info(
        "gradewire: %r rejected a JSON-schema response_format (%s); the schema goes in the "
        "prompt instead",
        model,
        getattr(exc, "server_message", None) or exc,
    )
