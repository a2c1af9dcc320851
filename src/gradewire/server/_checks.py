"""Checks of the reward server's settings: every bad one fails before anything binds."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from gradewire.core._errors import InvalidInputError, InvalidTypeError
from gradewire.core._grader import BaseGrader
from gradewire.core._log_text import TEXT_VALUE_CHARS

__all__ = [
    "ConnectionSettings",
    "by_key",
    "checked_token",
    "connection_settings",
    "default_max_connections",
    "finite",
    "label_key_checked",
    "log_bytes",
    "log_cap",
    "positive_int",
    "seconds",
]


@dataclass(frozen=True)
class ConnectionSettings:
    """How `serve` treats connections (see its arguments)."""

    max_connections: int
    header_timeout: float
    keepalive_timeout: float


def connection_settings(
    max_connections: int | None, header_timeout: float, keepalive_timeout: float
) -> ConnectionSettings:
    """`serve`'s connection arguments, checked; None: `default_max_connections`."""
    return ConnectionSettings(
        max_connections=(
            default_max_connections()
            if max_connections is None
            else positive_int(max_connections, "max_connections")
        ),
        header_timeout=seconds(header_timeout, "header_timeout"),
        keepalive_timeout=seconds(keepalive_timeout, "keepalive_timeout"),
    )


def default_max_connections() -> int:
    """Half the process's open-file limit (the rest for graders' files), 16 to 10,000."""
    try:
        import resource
    except ImportError:  # not a Unix system
        return 1_000
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 10_000
    return max(16, min(10_000, soft // 2))


def seconds(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidTypeError(f"{name} must be a number of seconds, not {value!r}")
    if not 0 < value < math.inf:
        raise InvalidInputError(
            f"{name} must be a positive, finite number of seconds, not {value!r}"
        )
    return float(value)


def log_bytes(value: object) -> int | None:
    if value is None:
        return None
    least = 4 * TEXT_VALUE_CHARS
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise InvalidInputError(
            f"max_log_bytes must be an int >= {least} (bytes of text each grader keeps), or "
            f"None to keep every record whole, not {value!r}"
        )
    return value


def by_key(
    graders: BaseGrader | Iterable[BaseGrader] | Mapping[str, BaseGrader],
) -> dict[str, BaseGrader]:
    pairs: list[tuple[object, object]]
    if isinstance(graders, BaseGrader):
        pairs = [(graders.grader_key, graders)]
    elif isinstance(graders, Mapping):
        pairs = list(graders.items())
    else:
        pairs = [(getattr(g, "grader_key", None), g) for g in graders]
    result: dict[str, BaseGrader] = {}
    for key, grader in pairs:
        if not isinstance(grader, BaseGrader):
            raise InvalidTypeError(f"the server serves graders, not {type(grader).__name__}")
        if not isinstance(key, str) or not key:
            raise InvalidInputError(f"grader keys must be non-empty strings, not {key!r}")
        if key in result:
            raise InvalidInputError(
                f"two graders share the key {key!r}; give each a distinct grader_key"
            )
        result[key] = grader
    if not result:
        raise InvalidInputError("the reward server needs at least one grader")
    return result


def checked_token(token: str | None) -> str | None:
    if token is None:
        return None
    if not isinstance(token, str):
        raise InvalidTypeError(f"token must be a str, not {type(token).__name__}")
    token = token.strip()
    if not token:
        return None
    try:
        token.encode("latin-1")
    except UnicodeEncodeError:
        raise InvalidInputError(
            "the token must be Latin-1 text (HTTP headers carry nothing else); use ASCII"
        ) from None
    return token


def positive_int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInputError(f"{name} must be a positive int, not {value!r}")
    return value


def log_cap(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 2:
        raise InvalidInputError(
            f"max_log_records must be an int >= 2 (records each grader keeps), or None to "
            f"keep every record, not {value!r}"
        )
    return value


def finite(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidTypeError(f"failure_reward must be a number, not {value!r}")
    if not math.isfinite(value):
        raise InvalidInputError(f"failure_reward must be finite, not {value!r}")
    return float(value)


def label_key_checked(value: object) -> str:
    if not isinstance(value, str):
        raise InvalidTypeError(f"label_key must be a str, not {type(value).__name__}")
    if not value.strip():
        raise InvalidInputError(
            "label_key must not be empty; it names the metadata key of each sample's label, "
            "e.g. 'answer'"
        )
    return value
