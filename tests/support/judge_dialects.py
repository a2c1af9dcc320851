"""Server dialects for the loopback judge server: how real servers take structured output.

`dialect_handler(name, answer)` makes a `JudgeServer` handler that checks each chat request
the way one family of servers does and answers as it would: a refusal, with the status and
words that server uses, for a field it does not take; else a chat answer whose text is
``answer(request, constrained)``. ``constrained`` is the JSON schema the server would hold
decoding to (None when it would not), so a test's fake model can write valid JSON only when
a real server would have enforced it.

Dialects (`DIALECTS`):

- ``openai``: ``response_format`` ``json_schema`` (and ``json_object``); an unknown field is
  a 400 whose ``error.param`` names it; logprobs work.
- ``vllm``: ``json_schema``, ``guided_json`` and ``structured_outputs.json`` constrain;
  unknown fields are ignored; logprobs work.
- ``llama_cpp_python``: ``json_schema`` is a **500** naming ``response_format`` ("Input
  should be 'text' or 'json_object'"); ``json_object`` with a ``schema`` constrains; unknown
  fields are ignored; logprobs work.
- ``ollama``: Ollama's OpenAI-compatible API: ``json_schema`` constrains, ``json_object``
  without a schema is JSON mode; unknown fields, and logprobs, are silently ignored.
- ``none``: no structured output: ``response_format``, ``guided_json`` and logprobs are 400s
  naming the field.
- ``strict_500``: like ``none``, but every refusal is a 500 (a server that turns every
  request-validation error into an internal error).

``length`` wraps a handler so that its answers stop at ``max_tokens``: ``finish_reason``
``"length"`` and the text cut.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from support.judge_server import Reply, Request, chat, error

__all__ = ["DIALECTS", "AnswerFn", "dialect_handler", "length"]

AnswerFn = Callable[[Request, "Mapping[str, Any] | None"], str]

DIALECTS = ("openai", "vllm", "llama_cpp_python", "ollama", "none", "strict_500")

_OPENAI_FIELDS = frozenset(
    {
        "model",
        "messages",
        "temperature",
        "max_tokens",
        "max_completion_tokens",
        "response_format",
        "logprobs",
        "top_logprobs",
        "seed",
        "top_p",
        "stop",
        "n",
        "user",
    }
)


def _refuse(status: int, field: str, message: str) -> Reply:
    return error(status, message, param=field if status < 500 else None)


def _check(name: str, body: Mapping[str, Any]) -> tuple[Reply | None, Mapping[str, Any] | None]:
    """(refusal, None) or (None, the schema the server would constrain decoding to)."""
    fmt = body.get("response_format")
    kind = fmt.get("type") if isinstance(fmt, Mapping) else None
    schema_of_fmt = None
    if kind == "json_schema":
        schema_of_fmt = fmt["json_schema"]["schema"]  # type: ignore[index]
    logprobs = "logprobs" in body or "top_logprobs" in body
    if name == "openai":
        unknown = sorted(set(body) - _OPENAI_FIELDS)
        if unknown:
            said = f"Unrecognized request argument supplied: {unknown[0]}"
            return _refuse(400, unknown[0], said), None
        if kind == "json_object" and "schema" in fmt:  # type: ignore[operator]
            said = "Unknown parameter: 'response_format.schema'."
            return _refuse(400, "response_format.schema", said), None
        return None, schema_of_fmt
    if name == "vllm":
        outputs = body.get("structured_outputs")
        guided = body.get("guided_json") or (outputs or {}).get("json")
        return None, schema_of_fmt or guided
    if name == "llama_cpp_python":
        if kind not in (None, "text", "json_object"):
            detail = (
                "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', "
                "'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\"}"
            )
            return error(500, detail), None
        return None, fmt.get("schema") if kind == "json_object" else None  # type: ignore[union-attr]
    if name == "ollama":
        return None, schema_of_fmt
    status = 500 if name == "strict_500" else 400
    if fmt is not None:
        return _refuse(status, "response_format", "response_format is not supported"), None
    for field in ("guided_json", "structured_outputs"):
        if field in body:
            return _refuse(status, field, f"unknown field: {field}"), None
    if logprobs:
        field = "top_logprobs" if "top_logprobs" in body else "logprobs"
        return _refuse(status, field, f"{field} is not supported by this server"), None
    del logprobs
    return None, None


def dialect_handler(name: str, answer: AnswerFn) -> Callable[[Request], Reply]:
    """A `JudgeServer` handler that speaks dialect ``name`` (see the module docstring)."""
    if name not in DIALECTS:
        raise ValueError(f"unknown dialect {name!r}; one of {DIALECTS}")

    def handle(request: Request) -> Reply:
        body = request.json
        refusal, constrained = _check(name, body)
        if refusal is not None:
            return refusal
        text = answer(request, constrained)
        wants_logprobs = bool(body.get("logprobs")) and name != "ollama"
        logprobs = [(text, -0.05, [(text, -0.05)])] if wants_logprobs else None
        return chat(text, logprobs=logprobs)

    return handle


def length(handler: Callable[[Request], Reply]) -> Callable[[Request], Reply]:
    """``handler`` whose answers are cut at ``max_tokens`` characters, ``finish_reason: length``."""

    def handle(request: Request) -> Reply:
        reply = handler(request)
        if reply.status != 200 or reply.json is None:
            return reply
        limit = request.json.get("max_tokens") or request.json.get("max_completion_tokens")
        body = dict(reply.json)
        choice = dict(body["choices"][0])
        text = choice["message"]["content"]
        if limit is not None and len(text) > limit:
            choice["message"] = {**choice["message"], "content": text[:limit]}
            choice["finish_reason"] = "length"
            body["usage"] = {**body["usage"], "completion_tokens": limit}
        body["choices"] = [choice]
        return Reply(json=body)

    return handle
