"""What an HTTP error answer means, for the judge client and the endpoint grader alike."""

from __future__ import annotations

import json
from collections.abc import Mapping

from gradewire.http._retry import (
    ModelHTTPError,
    RetryableError,
    is_retryable_status,
    retry_after_seconds,
)

__all__ = ["body_snippet", "failure_for_status", "server_message"]

_SNIPPET = 200


def body_snippet(body: bytes) -> str:
    """The start of a body, for error messages."""
    text = body[:_SNIPPET].decode("utf-8", "replace")
    return repr(text) + ("..." if len(body) > _SNIPPET else "")


def server_message(body: bytes) -> str:
    """The error message an error body carries (OpenAI's or FastAPI's shape), else its start."""
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    if isinstance(data, Mapping):
        error = data.get("error", data)
        if isinstance(error, Mapping):
            message = error.get("message") or error.get("detail")
            if message:
                return str(message)[:1000]
        elif isinstance(error, str) and error:
            return error[:1000]
        detail = data.get("detail")
        if detail:
            return str(detail)[:1000]
    return body_snippet(body) if body else "(empty body)"


def failure_for_status(
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    *,
    what: str,
    url: str,
    attempts: int,
    retry_advice: Mapping[int, str],
    refusal_advice: Mapping[int, str],
) -> RetryableError | ModelHTTPError:
    """The error an HTTP error answer stands for: worth a retry (429, 5xx...) or final.

    ``retry_advice`` and ``refusal_advice`` map a status to what the user should do; other
    statuses get generic advice.
    """
    message = server_message(body)
    if is_retryable_status(status):
        return RetryableError(
            f"HTTP {status}: {message}",
            status=status,
            retry_after=retry_after_seconds(headers),
            advice=retry_advice.get(status, "the server keeps failing: check its health and logs"),
        )
    advice = refusal_advice.get(status, "Check the request and the server's documentation")
    return ModelHTTPError(
        f"{what} at {url} refused the request with HTTP {status}: {message}. {advice}",
        endpoint=url,
        status=status,
        attempts=attempts,
        server_message=message,
    )
