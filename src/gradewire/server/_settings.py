"""ServerSettings: the reward server's limits, timeouts and access rules, checked once.

Each setting is declared once, as a field of `ServerSettings` with its default and its check
(and, in the class docstring, its doc). `create_app` and `serve` take the object whole
(``settings=``) or its fields as keywords, typed by `AppOptions` and `ServerOptions`;
keywords override the object's fields. ``gradewire serve`` makes one flag of each field.
Nothing here imports aiohttp: a bad setting fails before anything is built or bound.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Collection, Iterable, Mapping
from dataclasses import InitVar, field
from typing import Any

from typing_extensions import TypedDict

from gradewire.core._errors import InvalidInputError, InvalidTypeError
from gradewire.core._log_text import TEXT_VALUE_CHARS
from gradewire.core._settings import (
    check_fields,
    check_finite,
    check_positive_int,
    check_positive_int_or_none,
    check_positive_seconds,
    checked_by,
    field_checks,
    resolve_settings,
)
from gradewire.server._hosts import allowed_host_names

__all__ = [
    "AppOptions",
    "ServerOptions",
    "ServerSettings",
    "check_setting",
    "default_max_connections",
    "resolve_server_settings",
]


def _token(name: str, value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidTypeError(f"{name} must be a str, not {type(value).__name__}")
    token = value.strip()
    if not token:
        return None
    try:
        token.encode("latin-1")
    except UnicodeEncodeError:
        raise InvalidInputError(
            f"the {name} must be Latin-1 text (HTTP headers carry nothing else); use ASCII"
        ) from None
    return token


def _host_names(name: str, value: object) -> frozenset[str]:
    if not isinstance(value, Iterable):
        raise InvalidTypeError(f"{name} must be a list of host names, not {type(value).__name__}")
    return allowed_host_names(value)


def _label_key(name: str, value: object) -> str:
    if not isinstance(value, str):
        raise InvalidTypeError(f"{name} must be a str, not {type(value).__name__}")
    if not value.strip():
        raise InvalidInputError(
            f"{name} must not be empty; it names the metadata key of each sample's label, "
            "e.g. 'answer'"
        )
    return value


def _log_records(name: str, value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 2:
        raise InvalidInputError(
            f"{name} must be an int >= 2 (records each grader keeps), or None to keep every "
            f"record, not {value!r}"
        )
    return value


def _log_bytes(name: str, value: object) -> int | None:
    if value is None:
        return None
    least = 4 * TEXT_VALUE_CHARS
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise InvalidInputError(
            f"{name} must be an int >= {least} (bytes of text each grader keeps), or None to "
            f"keep every record whole, not {value!r}"
        )
    return value


@dataclasses.dataclass(frozen=True, kw_only=True)
class ServerSettings:
    """The reward server's limits, timeouts and access rules (`create_app`, `serve`).

    Every field is checked when the object is made: a bad value raises at once and names the
    field. ``serve(graders, max_concurrency=8)`` and
    ``serve(graders, settings=ServerSettings(max_concurrency=8))`` serve alike;
    ``gradewire serve`` has a flag for each field (``--max-concurrency 8``, and
    ``--allow-host`` for ``allowed_hosts``). The last three fields are the connections':
    `serve` applies them, and an app from `create_app` run by another server does not.

    Attributes:
        token: The bearer token clients must send as ``Authorization: Bearer <token>`` to
            every endpoint but ``/health`` (compared in constant time; 401 otherwise).
            Without one, only requests addressed to localhost, a loopback IP (127.0.0.1,
            [::1]) or an allowed host name, and sent by no web page of another site, are
            answered (403 otherwise): set a token to serve other hosts.
        allowed_hosts: Host names a server without a token answers besides loopback ones,
            as clients put them in its URL (``rm-node-1``, ``10.0.0.5``): for clients on
            other machines that cannot send a token, such as OpenRLHF's ``--remote_rm_url``.
            List only names you control; with a token, every host is answered anyway.
        max_batch: Most samples in one ``/v1/grade_batch`` or ``/get_reward`` request; more
            is refused with 413.
        max_body_bytes: Largest request body in bytes; larger ones are refused with 413.
        failure_value: The reward ``/get_reward`` and ``/verify`` give a sample that
            abstained or failed (flagged in ``extra_logs`` / ``error`` and ``abstained``,
            never silently); the name every reward adapter's `FailurePolicy` uses
            (``failure_reward=`` still works and warns).
        label_key: The ``metadata`` key ``/get_reward`` puts each sample's label under
            (OpenRLHF's ``labels``, from its ``--data.label_key`` column): ``answer`` for
            graders that read ``metadata["answer"]``.
        max_concurrency: Samples graded at once across every request; the others wait for a
            slot, first come first served (at 64, ten batches of 64 run 64 samples at a
            time, not 640).
        max_log_records: Log records each served grader keeps before folding the oldest
            into exact running statistics, so that memory stays bounded over a long run
            while ``/v1/logs`` figures stay exact (tables show recent samples). Set on every
            grader whose own ``max_log_records`` is None (in place). None (0 on the command
            line) keeps every record.
        max_log_bytes: Bytes of text (prompts, completions, reasons) each served grader
            keeps for its tables, long texts cut as they are logged; set on every grader
            that has none of its own. ``GET /v1/logs`` answers at most this much table text
            (the newest rows; ``rows_left_out`` counts the others). None (0 on the command
            line): no bound.
        body_timeout: Seconds a request body may take to arrive (408 after), and an answer
            to be sent (the connection is closed after: the client does not read).
        header_timeout: Seconds a connection has to send a complete request head, from when
            it opens or sends the first byte of its next request; then it is closed.
        keepalive_timeout: Seconds an idle keep-alive connection stays open.
        max_connections: Most connections open at once. At the limit, a new connection
            closes the one open the longest that sent no request yet, else the one idle the
            longest, and is refused with a 503 only when every open one is handling a
            request. None (0 on the command line): half the process's open-file limit
            (ulimit -n), between 16 and 10,000.
    """

    token: str | None = field(default=None, repr=False, metadata=checked_by(_token))
    allowed_hosts: Collection[str] = field(default=frozenset(), metadata=checked_by(_host_names))
    max_batch: int = field(default=4096, metadata=checked_by(check_positive_int))
    max_body_bytes: int = field(default=64 * 1024 * 1024, metadata=checked_by(check_positive_int))
    failure_value: float = field(default=0.0, metadata=checked_by(check_finite))
    failure_reward: InitVar[float | None] = None  # the old name of failure_value
    label_key: str = field(default="label", metadata=checked_by(_label_key))
    max_concurrency: int = field(default=64, metadata=checked_by(check_positive_int))
    max_log_records: int | None = field(default=10_000, metadata=checked_by(_log_records))
    max_log_bytes: int | None = field(default=16 * 1024 * 1024, metadata=checked_by(_log_bytes))
    body_timeout: float = field(default=60.0, metadata=checked_by(check_positive_seconds))
    header_timeout: float = field(default=15.0, metadata=checked_by(check_positive_seconds))
    keepalive_timeout: float = field(default=75.0, metadata=checked_by(check_positive_seconds))
    max_connections: int | None = field(
        default=None, metadata=checked_by(check_positive_int_or_none)
    )

    def __post_init__(self, failure_reward: float | None) -> None:
        if failure_reward is not None:
            warnings.warn(
                "failure_reward is deprecated: pass failure_value (the name every reward "
                "adapter's FailurePolicy uses)",
                DeprecationWarning,
                stacklevel=3,
            )
            object.__setattr__(self, "failure_value", failure_reward)
        check_fields(self)


class AppOptions(TypedDict, total=False):
    """The `ServerSettings` fields `create_app` takes as keywords (documented there)."""

    token: str | None
    allowed_hosts: Collection[str]
    max_batch: int
    max_body_bytes: int
    failure_value: float
    label_key: str
    max_concurrency: int
    max_log_records: int | None
    max_log_bytes: int | None
    body_timeout: float


class ServerOptions(AppOptions, total=False):
    """Every `ServerSettings` field, as `serve` takes them: the app's and the connections'."""

    header_timeout: float
    keepalive_timeout: float
    max_connections: int | None


_CHECKS = field_checks(ServerSettings)


def check_setting(name: str, value: object) -> object:
    """``value`` checked (and normalised) as the `ServerSettings` field ``name`` would be."""
    return _CHECKS[name](name, value)


def resolve_server_settings(
    settings: ServerSettings | None,
    options: Mapping[str, Any],
    *,
    takes: Collection[str] = ServerOptions.__optional_keys__,
    caller: str = "serve",
) -> ServerSettings:
    """``settings`` (default: the defaults) with the fields in ``options`` replaced.

    Raises:
        InvalidTypeError: ``settings`` is not a `ServerSettings`, or ``options`` names a
            field ``caller`` does not take (an unknown name raises `TypeError`, as for any
            function).
    """
    for name in options:
        if name in _CHECKS and name not in takes:
            raise InvalidTypeError(
                f"{caller}() takes no {name}: it is a setting of the connections, which serve() "
                "owns; pass it to serve(), or set it on the aiohttp runner that serves the app"
            )
    return resolve_settings(ServerSettings, settings, options)


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
