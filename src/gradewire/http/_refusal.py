"""Refusals that name a parameter: the server will not take it, however often it is asked.

Servers refuse a request field they do not take in their own ways: OpenAI with a 400 whose
``error.param`` names it, vLLM with a 400 or 422, llama-cpp-python with a **500** (it turns
every request-validation error into an internal error). Retrying any of them changes
nothing, and a 500 read as a server fault would spend the whole retry budget and then
advise the wrong thing. So an error answer whose body names a parameter the request carried
is a `ParameterRefusedError`, raised at once; the caller can drop or rephrase that parameter.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

from gradewire.http._failure import server_message
from gradewire.http._retry import ModelHTTPError

__all__ = ["ParameterRefusedError", "refused_parameter"]

# Statuses that say something else than "this field": auth, routing, size, load.
_NOT_ABOUT_FIELDS = frozenset({401, 403, 404, 405, 408, 409, 413, 429})


class ParameterRefusedError(ModelHTTPError):
    """A server refused a request parameter (its error answer names it); never retried.

    Attributes:
        parameter: The request field the server named (``"response_format"``,
            ``"logprobs"``...).
    """

    def __init__(
        self,
        message: str,
        *,
        endpoint: str,
        parameter: str,
        status: int | None = None,
        attempts: int = 1,
        server_message: str | None = None,
    ) -> None:
        super().__init__(
            message,
            endpoint=endpoint,
            status=status,
            attempts=attempts,
            server_message=server_message,
        )
        self.parameter = parameter

    def __reduce__(self) -> tuple[object, ...]:
        return (
            _rebuild,
            (
                type(self),
                str(self),
                self.endpoint,
                self.parameter,
                self.status,
                self.attempts,
                self.server_message,
            ),
        )


def _rebuild(
    cls: type[ParameterRefusedError],
    message: str,
    endpoint: str,
    parameter: str,
    status: int | None,
    attempts: int,
    server_message: str | None,
) -> ParameterRefusedError:
    return cls(
        message,
        endpoint=endpoint,
        parameter=parameter,
        status=status,
        attempts=attempts,
        server_message=server_message,
    )


def refused_parameter(status: int, body: bytes, candidates: Sequence[str]) -> str | None:
    """Which of ``candidates`` (fields the request carried) an error answer refuses, if any.

    The body's ``error.param`` (OpenAI's shape) decides when it names a candidate; otherwise
    the first candidate the error message names as a word (``top_logprobs`` is not
    ``logprobs``). Statuses about authentication, routing, size or load never count.
    """
    if status < 400 or status in _NOT_ABOUT_FIELDS or not candidates:
        return None
    param = _param_field(body)
    if param is not None:
        for name in candidates:
            if param == name or param.startswith(f"{name}."):
                return name
    said = server_message(body).lower()
    for name in candidates:
        if re.search(rf"(?<![a-z0-9_]){re.escape(name.lower())}(?![a-z0-9_])", said):
            return name
    return None


def _param_field(body: bytes) -> str | None:
    try:
        data = json.loads(body)
    except ValueError:
        return None
    error = data.get("error") if isinstance(data, Mapping) else None
    param = error.get("param") if isinstance(error, Mapping) else None
    return param if isinstance(param, str) and param else None
