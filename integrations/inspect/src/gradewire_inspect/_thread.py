"""An Inspect sample's conversation, target and metadata as the `StringThread` graders read."""

from __future__ import annotations

from typing import Any

from inspect_ai.model import ChatMessage
from inspect_ai.scorer import Target
from inspect_ai.solver import TaskState

from gradewire import InvalidInputError, StringThread

__all__ = ["state_thread"]


def _target(target: Target) -> str | list[str] | None:
    texts = [text for text in target.target if text != ""]
    if not texts:
        return None
    return texts[0] if len(texts) == 1 else texts


def _turns(messages: list[ChatMessage]) -> list[tuple[str, str]]:
    # Content parts other than text (images, reasoning) are left out, as Inspect's own
    # `.text` does: graders read text.
    return [(message.role, message.text) for message in messages]


def state_thread(state: TaskState, target: Target, target_key: str) -> StringThread:
    """The thread a grader scores for one Inspect sample.

    Turns are the sample's messages as the solvers left them (system, user, assistant, tool;
    text parts only), so ``completion()`` is the last assistant message; the model output's
    completion is added as one only when the messages hold no assistant message. Metadata is
    the sample's metadata with the target under ``target_key`` (a str, a list of str for
    several targets, absent for none).

    Raises:
        InvalidInputError: The sample's metadata already has ``target_key``.
    """
    metadata: dict[str, Any] = dict(state.metadata or {})
    value = _target(target)
    if value is not None:
        if target_key in metadata:
            raise InvalidInputError(
                f"the sample's metadata already has {target_key!r}, where the scorer puts the "
                "target; pass scorer(grader, target_key='...') with a key the metadata lacks"
            )
        metadata[target_key] = value
    turns = _turns(list(state.messages))
    completion = state.output.completion if state.output is not None else ""
    if completion and not any(role == "assistant" for role, _ in turns):
        # A solver that set the output without adding it to the messages.
        turns.append(("assistant", completion))
    return StringThread(turns, metadata)
