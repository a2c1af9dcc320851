"""NeMo Gym's ``/verify``: a rollout's Responses API exchange in, its reward out.

NeMo Gym's agents post each finished rollout to a resources server's ``/verify``: the
request (``nemo_gym.base_resources_server.BaseVerifyRequest``) carries
``responses_create_params`` (what the model was asked: ``input`` as a str or a list of
Responses API items, ``instructions``), ``response`` (the model's Responses API answer:
``output`` items) and the task's own fields beside them (``expected_answer``,
``question``, ...). The answer (``BaseVerifyResponse``) is the request with ``reward``
added; gradewire adds ``reward_components`` (a combination's sub-grades, as NeMo Gym's
multi-reward servers do), the grade tree, and why a rollout got no grade.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from gradewire.core._errors import IgnoreGradeException, InvalidInputError
from gradewire.core._grade import Grade
from gradewire.core._thread import StringThread
from gradewire.server._protocol import Outcome, RequestError, jsonable, outcome_answer

__all__ = ["verify_answer", "verify_thread"]

_EXCHANGE = ("responses_create_params", "response")
# The task's own fields are echoed while they fit in this many characters of JSON in all (NeMo
# Gym's BaseVerifyResponse is the request plus the reward; its agents read the exchange
# back, and its fields beside it are the task's few: expected_answer, question, ...). A
# field beyond it is left out and named under "not_echoed": a padded request must not
# cost its size again, twice (the text and its bytes), in the answer.
ECHO_CHARS = 1 << 20
# Responses API input roles; "developer" is OpenAI's newer name for a system prompt.
_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}


def _text(content: object, where: str) -> str:
    """A message's text: a str, or its text parts (``input_text`` / ``output_text``) joined."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise RequestError(422, f"{where}: 'content' must be a str or a list of content parts")
    texts = []
    for part in content:
        if not isinstance(part, Mapping):
            raise RequestError(422, f"{where}: a content part must be an object")
        kind = part.get("type")
        if kind in ("input_text", "output_text", "text"):
            text = part.get("text")
            if not isinstance(text, str):
                raise RequestError(422, f"{where}: a {kind} part needs 'text' as a str")
            texts.append(text)
        elif kind == "refusal" and isinstance(part.get("refusal"), str):
            texts.append(part["refusal"])
        else:
            # Images, files and audio cannot be graded as text: refuse rather than drop
            # them, so a grader never scores a message it did not see whole.
            raise RequestError(
                422, f"{where}: a content part of type {kind!r} cannot be graded as text"
            )
    return "".join(texts)


def _turn(item: object, where: str) -> tuple[str, str] | None:
    """One Responses API item as a turn; None for items that are not conversation text."""
    if not isinstance(item, Mapping):
        raise RequestError(422, f"{where} must be an object")
    kind = item.get("type", "message")
    if kind == "message":
        role = _ROLES.get(str(item.get("role")))
        if role is None:
            raise RequestError(422, f"{where} has role {item.get('role')!r}")
        return role, _text(item.get("content"), where)
    if kind == "function_call_output":
        output = item.get("output")
        return "tool", output if isinstance(output, str) else _text(output, where)
    # Reasoning, tool calls and other item types are the model's work, not its answer.
    return None


def _items(value: object, where: str, default_role: str) -> list[tuple[str, str]]:
    if value is None:
        return []
    if isinstance(value, str):
        return [(default_role, value)]
    if not isinstance(value, list):
        raise RequestError(422, f"{where} must be a str or a list of Responses API items")
    turns = [_turn(item, f"{where}[{i}]") for i, item in enumerate(value)]
    return [turn for turn in turns if turn is not None]


def verify_thread(data: object) -> StringThread:
    """The thread of one ``/verify`` body: instructions, input and output as turns.

    Metadata holds every other field of the body (the task's: ``expected_answer``, ...).
    """
    if not isinstance(data, Mapping):
        raise RequestError(
            422, "/verify takes a JSON object with 'responses_create_params' and 'response'"
        )
    for name in _EXCHANGE:
        if not isinstance(data.get(name), Mapping):
            raise RequestError(
                422,
                f"a /verify request needs {name!r} as an object (NeMo Gym's BaseVerifyRequest: "
                "the Responses API request and the model's response)",
            )
    params, response = data["responses_create_params"], data["response"]
    turns: list[tuple[str, str]] = []
    instructions = params.get("instructions")
    if isinstance(instructions, str) and instructions:
        turns.append(("system", instructions))
    turns += _items(params.get("input"), "responses_create_params.input", "user")
    output = response.get("output")
    if not isinstance(output, list):
        raise RequestError(422, "response.output must be a list of Responses API items")
    turns += _items(output, "response.output", "assistant")
    metadata = {key: value for key, value in data.items() if key not in _EXCHANGE}
    try:
        return StringThread(turns, metadata)
    except InvalidInputError as exc:
        raise RequestError(422, str(exc)) from None


def _components(grade: Grade) -> dict[str, float]:
    if grade.children:
        return {child.grader_key: child.value for child in grade.children}
    return {grade.grader_key: grade.value}


def verify_answer(
    data: Mapping[str, Any], outcome: Outcome, failure_reward: float
) -> dict[str, Any]:
    """NeMo Gym's ``BaseVerifyResponse``: the request, ``reward`` and ``reward_components``.

    Also ``grade`` (the tree), ``error`` and ``abstained`` (`outcome_answer`'s fields). A
    rollout with no grade gets ``failure_reward``, empty components and its reason, never a
    silent 0. The exchange (``responses_create_params``, ``response``) comes back whole, the
    task's other fields while they fit in `ECHO_CHARS` characters of JSON: those left out are listed
    under ``not_echoed``.
    """
    answer = _echo(data)
    answer.update(outcome_answer(outcome))
    if isinstance(outcome, Grade):
        answer["reward"] = outcome.value
        answer["reward_components"] = jsonable(_components(outcome))
    else:
        answer["reward"] = failure_reward
        answer["reward_components"] = {}
        answer["abstained"] = isinstance(outcome, IgnoreGradeException)
    return answer


def _echo(data: Mapping[str, Any]) -> dict[str, Any]:
    """The request's fields to answer with: the exchange, then the others within budget."""
    answer = {key: data[key] for key in _EXCHANGE if key in data}
    budget = ECHO_CHARS
    left_out: list[str] = []
    for key, value in data.items():
        if key in _EXCHANGE:
            continue
        size = _json_size(value, budget)
        if size > budget:
            left_out.append(key)
            continue
        budget -= size
        answer[key] = value
    if left_out:
        answer["not_echoed"] = left_out
    return answer


def _json_size(value: Any, limit: int) -> int:
    """Characters of ``value`` as JSON, counted until past ``limit`` (then a number above it)."""
    if isinstance(value, str) and len(value) > limit:
        return limit + 1  # its JSON is at least as long: never encoded to find out
    size = 0
    try:
        for chunk in json.JSONEncoder(ensure_ascii=False).iterencode(value):
            size += len(chunk)
            if size > limit:
                break
    except (TypeError, ValueError):
        return limit + 1  # not JSON as it is: never echoed
    return size
