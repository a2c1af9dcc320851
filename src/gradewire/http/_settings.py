"""Checks of the HTTP settings every client here takes: headers and timeouts."""

from __future__ import annotations

from collections.abc import Mapping

from gradewire.core._errors import InvalidInputError, InvalidTypeError
from gradewire.core._settings import check_positive_seconds

__all__ = ["check_headers", "seconds_setting"]


def check_headers(headers: Mapping[str, str]) -> None:
    for name, value in headers.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise InvalidTypeError(
                f"HTTP headers must be str: str, got {name!r}: {value!r}; convert the values"
            )
        if any(c in name + value for c in "\r\n\0") or not name.strip() or ":" in name:
            raise InvalidInputError(
                f"invalid HTTP header {name!r}: names and values cannot hold line breaks "
                "(check api_key= and headers= for a pasted newline)"
            )
        try:
            (name + value).encode("latin-1")
        except UnicodeEncodeError as exc:
            raise InvalidInputError(
                f"invalid HTTP header {name!r}: HTTP headers carry Latin-1 text only ({exc})"
            ) from exc


def seconds_setting(name: str, value: object) -> float:
    # The one check of seconds (core): infinity and NaN are refused, as everywhere.
    return check_positive_seconds(name, value)
