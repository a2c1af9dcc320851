"""Anthropic Messages API answers for `JudgeServer`, each checked by the anthropic package.

`MessagesAPI` is a `JudgeServer` handler that speaks the Messages API on
``POST /v1/messages``: it validates every request body against the ``anthropic`` package's
own `MessageCreateParamsNonStreaming` (unknown fields refused) and its headers
(``x-api-key``, ``anthropic-version``), and answers with bodies built by `message` and
`overloaded`/`api_error`, which are validated by the package's `Message` and
`ErrorResponse` before they are sent. A request that is not valid gets a 400
``invalid_request_error`` naming the problem, as the real API would.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Mapping
from typing import Any

from anthropic.types import Message
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from anthropic.types.shared import ErrorResponse
from pydantic import TypeAdapter, ValidationError

from support.judge_server import Reply, Request

__all__ = ["MessagesAPI", "api_error", "message", "message_body"]

_PARAMS = TypeAdapter(MessageCreateParamsNonStreaming)
_KEYS = MessageCreateParamsNonStreaming.__required_keys__ | (
    MessageCreateParamsNonStreaming.__optional_keys__
)
# Fields given as Iterable in the types: pydantic checks their items only when iterated.
_LAZY = ("messages", "tools", "stop_sequences")


def message_body(
    text: str | None = None,
    *,
    tool_input: Mapping[str, Any] | None = None,
    tool_name: str = "Verdict",
    model: str = "claude-judge-20260101",
    stop_reason: str | None = None,
    input_tokens: int = 12,
    output_tokens: int = 7,
    cache_read_input_tokens: int = 0,
) -> dict[str, Any]:
    """A Messages API answer: text, or one tool call, checked by ``anthropic.types.Message``."""
    content: list[dict[str, Any]] = []
    if text is not None:
        content.append({"type": "text", "text": text, "citations": None})
    if tool_input is not None:
        content.append(
            {"type": "tool_use", "id": "toolu_01", "name": tool_name, "input": dict(tool_input)}
        )
    body = {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason or ("tool_use" if tool_input is not None else "end_turn"),
        "stop_sequence": None,
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": cache_read_input_tokens,
        },
    }
    Message.model_validate(body)  # the answer is a real Messages API answer
    return body


def message(text: str | None = None, **fields: Any) -> Reply:
    """A 200 answer; ``fields`` go to `message_body`."""
    return Reply(json=message_body(text, **fields))


def api_error(
    status: int, kind: str, text: str, *, retry_after: float | str | None = None
) -> Reply:
    """An error answer in the API's shape (``overloaded_error`` with 529...), checked."""
    body = {"type": "error", "error": {"type": kind, "message": text}, "request_id": "req_01"}
    ErrorResponse.model_validate(body)
    headers = {"request-id": "req_01"}
    if retry_after is not None:
        headers["retry-after"] = str(retry_after)
    return Reply(status=status, json=body, headers=headers)


Answer = Callable[[dict[str, Any]], Reply]


class MessagesAPI:
    """A Messages API on a `JudgeServer`: checks each request, answers from a script.

    Args:
        answer: Answers a valid request (its body) when no scripted reply is queued.
        api_key: The ``x-api-key`` the API wants (None: any, or none, as a local server).
    """

    def __init__(
        self, answer: Answer | None = None, *, api_key: str | None = "sk-ant-test"
    ) -> None:
        self.answer = answer or (lambda body: message("PASS"))
        self.api_key = api_key
        self.bodies: list[dict[str, Any]] = []
        self._queue: collections.deque[Reply] = collections.deque()
        self._lock = threading.Lock()

    def script(self, *replies: Reply) -> None:
        """Answer the next valid requests with these replies, in order."""
        with self._lock:
            self._queue.extend(replies)

    def __call__(self, request: Request) -> Reply:
        if request.method != "POST" or not request.path.endswith("/v1/messages"):
            return api_error(404, "not_found_error", f"Not found: {request.path}")
        if self.api_key is not None and request.headers.get("x-api-key") != self.api_key:
            return api_error(401, "authentication_error", "invalid x-api-key")
        if not request.headers.get("anthropic-version"):
            return api_error(400, "invalid_request_error", "anthropic-version: header required")
        body = request.json
        problem = _invalid(body)
        if problem is not None:
            return api_error(400, "invalid_request_error", problem)
        with self._lock:
            self.bodies.append(body)
            queued = self._queue.popleft() if self._queue else None
        return queued if queued is not None else self.answer(body)


def _invalid(body: object) -> str | None:
    if not isinstance(body, dict):
        return "the body must be a JSON object"
    unknown = sorted(set(body) - _KEYS)
    if unknown:
        return f"{unknown[0]}: Extra inputs are not permitted"
    try:
        checked = _PARAMS.validate_python(body)
        for name in _LAZY:
            if name in checked:
                list(checked[name])
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        return f"{where}: {error['msg']}"
    if body.get("stream"):
        return "stream: this test API answers only non-streaming requests"
    return None


# Built now, at collection: pydantic builds the anthropic types' validators on first use,
# which would otherwise land in whichever test comes first.
_invalid({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "x"}]})
message_body("warm")
api_error(529, "overloaded_error", "warm")
