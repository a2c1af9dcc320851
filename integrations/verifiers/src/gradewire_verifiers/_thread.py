"""A verifiers rollout's prompt, completion and task fields as the `StringThread` graders read."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gradewire import StringThread

__all__ = ["rollout_thread"]


def _message(message: Any) -> dict[str, Any]:
    # verifiers 0.3 keeps messages as its pydantic message types or as plain dicts.
    if isinstance(message, Mapping):
        return {"role": message.get("role"), "content": message.get("content")}
    return {"role": getattr(message, "role", None), "content": getattr(message, "content", None)}


def _messages(value: Any, role: str) -> list[dict[str, Any]]:
    if value is None:
        return []
    if isinstance(value, str):
        return [{"role": role, "content": value}]
    return [_message(message) for message in value]


def rollout_thread(objects: Mapping[str, Any], answer_key: str) -> StringThread:
    """The thread for one rollout, from the objects verifiers hands its reward functions.

    Turns are the prompt's messages and then the completion's (a str prompt is a user turn,
    a str completion an assistant turn). Metadata holds the rollout's ``info`` fields, the
    data set's other columns, and its ``answer`` under ``answer_key``.
    """
    metadata: dict[str, Any] = {}
    info = objects.get("info")
    if isinstance(info, Mapping):
        metadata.update(info)
    task = objects.get("task")
    if isinstance(task, Mapping):
        metadata.update({k: v for k, v in task.items() if k not in ("prompt", "completion")})
    metadata[answer_key] = objects.get("answer", "")
    turns = [
        *_messages(objects.get("prompt"), "user"),
        *_messages(objects.get("completion"), "assistant"),
    ]
    return StringThread.from_messages(turns, metadata)
