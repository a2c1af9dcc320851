"""What an abstention or error record holds besides the reason."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from gradewire.core._thread import StringThread

__all__ = ["attach_log_fields", "failure_context", "log_fields"]


def failure_context(sample: object) -> dict[str, str]:
    if isinstance(sample, StringThread):
        return {
            "prompt": sample.last_user_content() or "",
            "completion": sample.completion() or "",
        }
    return {}


def attach_log_fields(exc: BaseException, fields: Mapping[str, Any]) -> None:
    """Have ``fields`` logged with the abstention or error record ``exc`` will cause."""
    with contextlib.suppress(AttributeError):  # an exception type without a __dict__
        exc.log_fields = {**log_fields(exc), **fields}  # type: ignore[attr-defined]


def log_fields(exc: BaseException) -> dict[str, Any]:
    fields = getattr(exc, "log_fields", None)
    return dict(fields) if isinstance(fields, Mapping) else {}
