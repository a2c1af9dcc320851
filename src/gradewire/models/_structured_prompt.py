"""What `complete_structured` adds to a conversation: the answer format, and repair requests."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from gradewire.models._answer_example import answer_example, enum_notes
from gradewire.models._chat_model import ChatMessage

__all__ = ["format_instruction", "instruction_for", "repair_request", "with_instruction"]

# Response model classes whose instructions are kept; a process seldom has more than a few.
_MEMO_SIZE = 256


@functools.lru_cache(maxsize=_MEMO_SIZE)
def instruction_for(schema: type[BaseModel]) -> str:
    """`format_instruction` for a response model, made once per class.

    pydantic builds the JSON schema afresh on every ``model_json_schema()`` call, which
    would cost more than the rest of a judge call's own work.
    """
    return format_instruction(schema.model_json_schema())


# The start of the rejected reply shown back to the model: enough to see what it wrote.
_SHOWN_REPLY_CHARS = 2000


def format_instruction(schema: dict[str, Any]) -> str:
    """Ask for JSON shaped like one example instance of ``schema`` (not the schema itself).

    Small models shown a JSON schema copy it back or discuss it; shown an answer of the
    right shape, and the values each enum field may take, they write one.
    """
    what = "a JSON object" if schema.get("type") == "object" else "JSON"
    lines = [
        f"Reply with only {what}, and no other text, shaped like this example:",
        answer_example(schema),
    ]
    notes = enum_notes(schema)
    if notes:
        lines.append("where " + "; ".join(notes) + ".")
    return "\n".join(lines)


def with_instruction(messages: Sequence[ChatMessage], instruction: str) -> list[ChatMessage]:
    """``messages`` with ``instruction`` added to the last user turn (or as a new one)."""
    conversation = list(messages)
    last = conversation[-1] if conversation else None
    if last is not None and last.get("role") == "user" and isinstance(last.get("content"), str):
        # Appended to the last user turn: some chat templates refuse two user turns in a row.
        conversation[-1] = {**last, "content": f"{last['content']}\n\n{instruction}"}
    else:
        conversation.append({"role": "user", "content": instruction})
    return conversation


def repair_request(
    conversation: Sequence[ChatMessage], reply: str, problem: str, instruction: str | None
) -> list[ChatMessage]:
    """The conversation, the rejected reply, and a user turn saying in one line what was wrong.

    Args:
        conversation: What the model was asked.
        reply: Its rejected reply (cut to its first 2,000 characters).
        problem: What was wrong with it, as the parser said.
        instruction: The answer-format instruction to repeat (prompt mode), or None.
    """
    shown = reply if len(reply) <= _SHOWN_REPLY_CHARS else reply[:_SHOWN_REPLY_CHARS] + " ..."
    request = (
        f"That reply could not be used: {_one_line(problem)}. Write the answer again as one "
        "JSON object, fixing that, with no other text."
    )
    if instruction:
        request += "\n\n" + instruction
    return [
        *conversation,
        {"role": "assistant", "content": shown},
        {"role": "user", "content": request},
    ]


def _one_line(text: str, limit: int = 300) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."
