"""Anthropic's Messages API as a `Provider`: request bodies in, `ChatCompletion`s out.

Spoken over plain HTTP (the ``anthropic`` package is not needed; its types check the tests).
A call in OpenAI's chat format becomes a Messages request: system turns go to ``system``,
``max_tokens`` is always sent (the API requires it: 4,096 unless set); no temperature is
sent and no logprobs are asked for (the API, as the ``anthropic`` 2.x package types it,
takes neither). A JSON schema travels in one of three dialects:

- ``"tool_use"``: one tool whose ``input_schema`` is the schema, forced by ``tool_choice``;
  the answer is the tool call's input. Every Claude model takes it.
- ``"output_format"``: ``output_config.format`` (``{"type": "json_schema", "schema": S}``,
  Anthropic's structured outputs, decoded under the schema), without the bound keywords
  (``minimum``, ``maxLength``...) it refuses. Newer models only.
- ``"prompt"``: no field; the prompt shows one example answer.

``"auto"`` tries them in that order. Errors come as ``{"type": "error", "error": {"type":
"overloaded_error", "message": ...}}``: 429 (``rate_limit_error``), 5xx and 529
(``overloaded_error``) are retried, honouring ``retry-after``; the others are final.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from gradewire.http._failure import body_snippet
from gradewire.http._retry import (
    ModelHTTPError,
    RetryableError,
    is_retryable_status,
    retry_after_seconds,
)
from gradewire.models._chat_model import ChatCompletion, ChatMessage, Usage
from gradewire.models._dialects import STRICT_REFUSED, Dialects, without_keywords
from gradewire.models._model_settings import ModelSettings
from gradewire.models._negotiation import WirePlan
from gradewire.models._openai_wire import encode_payload
from gradewire.models._provider import Provider, check_messages

__all__ = ["ANTHROPIC_DIALECTS", "ANTHROPIC_VERSION", "AnthropicProvider"]

ANTHROPIC_VERSION = "2023-06-01"
"""The ``anthropic-version`` header sent: the Messages API's version."""

ANTHROPIC_DIALECTS = Dialects(
    order=("tool_use", "output_format", "prompt"),
    parameters={
        "tool_use": ("tool_choice", "tools"),
        "output_format": ("output_config", "output_format"),
        "prompt": (),
    },
)
"""The structured-output dialects of the Messages API (see the module docstring)."""

_DEFAULT_MAX_TOKENS = 4096
# The roles whose turns go to the top-level system prompt.
_SYSTEM_ROLES = frozenset({"system", "developer"})
_TOOL_DESCRIPTION = "Give your answer by calling this tool, with the answer as its input."
# Why generation stopped, in OpenAI's words: a forced tool call is a complete answer.
_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
}
_RETRY_ADVICE = {
    408: "the server timed out the requests: raise attempt_timeout= or lower max_concurrency",
    429: "the API is rate limiting (rate_limit_error): lower max_concurrency or check your "
    "rate limits",
    529: "the API is overloaded (overloaded_error): allow more attempts, lower "
    "max_concurrency, or try later",
}
_REFUSAL_ADVICE = {
    400: (
        "Check the request: the messages, max_tokens (required, within the model's "
        "limit) and extra_body this API accepts"
    ),
    401: "Check the API key (api_key= or the ANTHROPIC_API_KEY environment variable)",
    403: "The API key has no access to this model or endpoint: check its permissions",
    404: (
        "Check base_url (the client POSTs to {url}, so base_url is the API root, without "
        "/v1/messages) and the model name"
    ),
    413: "The request is too large for the API: shorten the prompt",
}


class AnthropicProvider(Provider):
    """Anthropic's Messages API (``POST {base_url}/v1/messages``)."""

    name: ClassVar[str] = "anthropic"
    dialects: ClassVar[Dialects] = ANTHROPIC_DIALECTS
    logprobs: ClassVar[bool] = False
    takes: ClassVar[frozenset[str]] = frozenset({"max_tokens"})
    defaults: ClassVar[ModelSettings] = ModelSettings(max_tokens=_DEFAULT_MAX_TOKENS)
    default_base_url: ClassVar[str] = "https://api.anthropic.com"
    base_url_env: ClassVar[str] = "ANTHROPIC_BASE_URL"
    api_key_env: ClassVar[str] = "ANTHROPIC_API_KEY"
    public_host: ClassVar[str | None] = "api.anthropic.com"
    headers: ClassVar[Mapping[str, str]] = {"anthropic-version": ANTHROPIC_VERSION}
    reserved_body_keys: ClassVar[frozenset[str]] = frozenset(
        {"model", "messages", "stream", "system"}
    )
    cache_namespace: ClassVar[bytes] = b"anthropic-messages\n"

    def url(self, base_url: str) -> str:
        # The API root is given without /v1, as the anthropic package takes it; a root
        # given with it (as OpenAI-compatible ones are) means the same place.
        if base_url.endswith("/v1"):
            return f"{base_url}/messages"
        return f"{base_url}/v1/messages"

    def auth_headers(self, key: str) -> dict[str, str]:
        return {"x-api-key": key}

    def encode(
        self,
        model: str,
        messages: Sequence[ChatMessage],
        plan: WirePlan,
        *,
        temperature: float | None,
        max_tokens: int | None,
        response_format: Mapping[str, Any] | None,
        logprobs: int | None,
        extra_body: Mapping[str, Any] | None,
    ) -> bytes:
        payload: dict[str, Any] = dict(extra_body) if extra_body else {}
        system: list[str] = []
        turns: list[dict[str, Any]] = []
        for message in check_messages(messages):
            if message["role"] in _SYSTEM_ROLES:
                system.append(message["content"])
            else:
                turns.append({"role": message["role"], "content": message["content"]})
        payload["model"] = model
        payload["messages"] = turns
        if system:
            payload["system"] = "\n\n".join(system)
        payload["max_tokens"] = max_tokens if max_tokens is not None else _DEFAULT_MAX_TOKENS
        # No temperature: the API takes none (see `takes`; the core passes None).
        if response_format is not None and plan.dialect not in (None, "prompt"):
            _apply_dialect(payload, plan.dialect, response_format)
        return encode_payload(payload)

    def decode(self, body: bytes, requested_model: str, *, what: str, url: str) -> ChatCompletion:
        try:
            data = json.loads(body.decode())
            blocks = data["content"]
            texts = [str(b["text"]) for b in blocks if b.get("type") == "text"]
            calls = [b["input"] for b in blocks if b.get("type") == "tool_use"]
            usage = data.get("usage") or {}
            prompt_tokens = sum(
                int(usage.get(name) or 0)
                for name in (
                    "input_tokens",
                    "cache_creation_input_tokens",
                    "cache_read_input_tokens",
                )
            )
            completion_tokens = int(usage.get("output_tokens") or 0)
            stop = data.get("stop_reason")
            model = data.get("model") or requested_model
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise RetryableError(
                f"HTTP 200 with a body that is not a Messages answer ({type(exc).__name__}: "
                f"{exc}; body starts with {body_snippet(body)})",
                advice=(
                    f"check that {url} is Anthropic's Messages API (base_url is the API root, "
                    "e.g. https://api.anthropic.com) and that nothing between rewrites answers"
                ),
            ) from exc
        if stop == "refusal":
            said = "".join(texts) or "(no text)"
            raise ModelHTTPError(
                f"{what} at {url} refused to answer (stop_reason 'refusal'): {said}. Rephrase "
                "the judge prompt or use another model",
                endpoint=url,
                status=200,
                server_message=said,
            )
        # A forced tool call is the answer: its input, as the JSON text a parser reads.
        text = json.dumps(calls[0], ensure_ascii=False) if calls else "".join(texts)
        return ChatCompletion(
            text=text,
            usage=Usage(prompt_tokens, completion_tokens),
            model=str(model),
            finish_reason=_FINISH.get(stop, stop) if isinstance(stop, str) else None,
        )

    def failure(
        self,
        status: int,
        headers: Mapping[str, str],
        body: bytes,
        *,
        what: str,
        url: str,
        attempts: int,
    ) -> RetryableError | ModelHTTPError:
        kind, said = _error(body)
        detail = f"HTTP {status}" + (f" {kind}" if kind else "") + f": {said}"
        if is_retryable_status(status):
            return RetryableError(
                detail,
                status=status,
                retry_after=retry_after_seconds(headers),
                advice=_RETRY_ADVICE.get(
                    status, "the API keeps failing (api_error): check status.anthropic.com"
                ),
            )
        advice = _REFUSAL_ADVICE.get(status, "Check the request and the API's documentation")
        return ModelHTTPError(
            f"{what} at {url} refused the request with {detail}. {advice.format(url=url)}",
            endpoint=url,
            status=status,
            attempts=attempts,
            server_message=said,
        )


def _apply_dialect(
    payload: dict[str, Any], dialect: str, response_format: Mapping[str, Any]
) -> None:
    spec = response_format.get("json_schema")
    schema = spec.get("schema") if isinstance(spec, Mapping) else None
    if response_format.get("type") != "json_schema" or not isinstance(schema, Mapping):
        return  # only a JSON schema has a dialect here; anything else is left out
    if dialect == "tool_use":
        name = str(spec.get("name") or "answer") if isinstance(spec, Mapping) else "answer"
        name = re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64] or "answer"
        payload["tools"] = [
            {"name": name, "description": _TOOL_DESCRIPTION, "input_schema": dict(schema)}
        ]
        payload["tool_choice"] = {"type": "tool", "name": name}
    elif dialect == "output_format":
        config = dict(payload.get("output_config") or {})
        config["format"] = {
            "type": "json_schema",
            "schema": without_keywords(dict(schema), STRICT_REFUSED),
        }
        payload["output_config"] = config


def _error(body: bytes) -> tuple[str | None, str]:
    """The error type and message of an error body (Anthropic's shape), else its start."""
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    error = data.get("error") if isinstance(data, Mapping) else None
    if isinstance(error, Mapping):
        kind = error.get("type")
        message = error.get("message")
        return (
            str(kind) if kind else None,
            str(message)[:1000] if message else "(no message)",
        )
    return None, body_snippet(body) if body else "(empty body)"
