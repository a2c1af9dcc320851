"""The reward server: graders over HTTP, so a trainer on another machine can call them.

Endpoints (JSON in and out; every error is ``{"error": message}`` with a 4xx status):

- ``GET /health``: ``{"status": "ok"}``, open to any client (load balancers, probes).
- ``GET /v1/graders``: the graders' keys, classes and specs.
- ``POST /v1/grade``: ``{"grader": key, "thread": StringThread.to_dict()}`` (``grader``
  optional when the server hosts one) → ``{"grade": Grade.to_dict() | null, "error":
  str | null, "abstained": bool}``.
- ``POST /v1/grade_batch``: ``{"grader": key, "threads": [...]}`` →
  ``{"grades": [...]}``, each as above; one failing sample never fails the batch.
- ``POST /get_reward``: OpenRLHF's remote reward model protocol (``--remote_rm_url``; pick a
  grader with ``?grader=KEY``). Each label goes in ``metadata[label_key]`` (default
  ``"label"``; ``--label-key answer`` for graders reading ``metadata["answer"]``). A sample
  that abstains or fails gets ``failure_reward`` (default 0.0), is flagged in ``extra_logs``
  (``reward_abstained``, ``reward_failed``) and has its reason in ``errors``.
- ``GET /v1/logs``: every grader's `get_logs()`, read only.
- ``POST /v1/logs/clear``: every grader's `get_logs()`, then empties them.

Every POST body must be sent as ``Content-Type: application/json`` (415 otherwise), so a web
page cannot post to the server with a plain HTML form or a preflight-free ``fetch``. Without
a token the server answers only requests addressed to this machine (``Host`` of
``localhost`` or a loopback IP such as ``127.0.0.1`` or ``[::1]``, any port; or a name listed
in ``allowed_hosts``) and carrying no ``Origin`` of another site (403 otherwise): a site the
user visits can neither rebind its DNS name to the server nor post to it from the browser.
Serving other machines takes a token (or, for clients that cannot send one, such as
OpenRLHF's, the names they use in ``allowed_hosts``).

Each served grader whose ``max_log_records`` is None gets the server's (default 10,000), and
whose ``max_log_bytes`` is None the server's (default 16 MiB of text), so a long training run
that never clears the logs keeps memory bounded while ``/v1/logs`` figures stay exact.

Under hostile or heavy load: at most ``max_concurrency`` samples are graded at once across
all requests (the rest queue); a connection must send its request head within
``header_timeout`` and its body within ``body_timeout``; at most ``max_connections`` are open,
an idle one closed to make room (one that never sent a request first); malformed HTTP gets
a JSON 400 that never repeats a header; and lines a client can cause are logged at a
bounded rate.

Built on aiohttp (the ``gradewire[serve]`` extra): its server parses HTTP in C and caps
request bodies itself, with one dependency rather than the two of starlette + uvicorn.
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from gradewire.core._errors import InvalidInputError, MissingDependencyError
from gradewire.core._grader import BaseGrader
from gradewire.server._checks import (
    by_key,
    checked_token,
    connection_settings,
    finite,
    label_key_checked,
    log_bytes,
    log_cap,
    positive_int,
    seconds,
)
from gradewire.server._hosts import allowed_host_names

if TYPE_CHECKING:
    from aiohttp import web

__all__ = ["create_app", "is_loopback", "serve"]

DEFAULT_MAX_BATCH = 4096
DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_LOG_RECORDS = 10_000
DEFAULT_MAX_LOG_BYTES = 16 * 1024 * 1024
DEFAULT_HEADER_TIMEOUT = 15.0
DEFAULT_KEEPALIVE_TIMEOUT = 75.0
DEFAULT_BODY_TIMEOUT = 60.0


def create_app(
    graders: BaseGrader | Iterable[BaseGrader] | Mapping[str, BaseGrader],
    *,
    token: str | None = None,
    max_batch: int = DEFAULT_MAX_BATCH,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    failure_reward: float = 0.0,
    max_concurrency: int = 64,
    max_log_records: int | None = DEFAULT_MAX_LOG_RECORDS,
    max_log_bytes: int | None = DEFAULT_MAX_LOG_BYTES,
    allowed_hosts: Iterable[str] = (),
    body_timeout: float = DEFAULT_BODY_TIMEOUT,
    label_key: str = "label",
) -> web.Application:
    """The reward server as an `aiohttp.web.Application` (to run, mount or test).

    Args:
        graders: The graders to serve, by their ``grader_key`` (or a mapping key → grader).
        token: When set, every endpoint but ``/health`` needs ``Authorization: Bearer
            <token>`` (compared in constant time); 401 otherwise. When None, only requests
            addressed to ``localhost``, a loopback IP (``127.0.0.1``, ``[::1]``) or one of
            ``allowed_hosts``, and carrying no ``Origin`` of another site, are answered
            (403 otherwise; ``/health`` excepted): set a token to serve other hosts.
        max_batch: Most samples in one ``/v1/grade_batch`` or ``/get_reward`` request;
            more is refused with 413.
        max_body_bytes: Largest request body; larger ones are refused with 413.
        failure_reward: The reward ``/get_reward`` gives a sample that abstained or failed
            (flagged in ``extra_logs``, never silently).
        max_concurrency: Samples graded at once, across every request: the others wait
            for a slot, first come first served (ten batches of 64 with a
            ``max_concurrency`` of 64 run 64 samples at a time, not 640).
        max_log_records: Set as ``max_log_records`` on every served grader that has none of
            its own (None leaves them all unbounded): a server runs for as long as training
            does, and its graders' logs must not grow with it (see
            `BaseGrader.max_log_records`). The graders are changed in place.
        max_log_bytes: Set as ``max_log_bytes`` on every served grader that has none of its
            own: the bytes of text (prompts, completions, reasons) each keeps for its
            tables, long texts cut as they are logged (see `BaseGrader.max_log_bytes`).
            ``/v1/logs`` answers at most this much table text too (the newest rows; how
            many were left out is under ``"rows_left_out"``). None: no bound.
        allowed_hosts: Host names a server without a token answers besides loopback ones,
            as clients put them in its URL (``"rm-node-1"``, ``"10.0.0.5"``): for a client
            on another machine that cannot send a token (OpenRLHF's ``--remote_rm_url``).
            List only names you control; with a token, every host is answered anyway.
        body_timeout: Seconds a request's body may take to arrive (408 after), and an
            answer to be sent (the connection is closed after: the client does not read).
        label_key: The ``metadata`` key ``/get_reward`` puts each sample's label under
            (OpenRLHF's ``labels``, from its ``--data.label_key`` column): ``"answer"`` for
            graders that read ``metadata["answer"]``.

    Raises:
        MissingDependencyError: aiohttp is not installed (``pip install 'gradewire[serve]'``).
    """
    _require_aiohttp()
    from gradewire.server._app import ServerSettings, build_app

    settings = ServerSettings(
        graders=by_key(graders),
        token=checked_token(token),
        max_batch=positive_int(max_batch, "max_batch"),
        max_body_bytes=positive_int(max_body_bytes, "max_body_bytes"),
        failure_reward=finite(failure_reward),
        max_concurrency=positive_int(max_concurrency, "max_concurrency"),
        allowed_hosts=allowed_host_names(allowed_hosts),
        body_timeout=seconds(body_timeout, "body_timeout"),
        max_log_bytes=log_bytes(max_log_bytes),
        label_key=label_key_checked(label_key),
    )
    cap = log_cap(max_log_records)
    # After every check: a refused configuration leaves the graders as they were.
    for grader in settings.graders.values():
        if cap is not None and getattr(grader, "max_log_records", None) is None:
            grader.max_log_records = cap
        if settings.max_log_bytes is not None and grader.max_log_bytes is None:
            grader.max_log_bytes = settings.max_log_bytes
    return build_app(settings)


async def serve(
    graders: BaseGrader | Iterable[BaseGrader] | Mapping[str, BaseGrader],
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    token: str | None = None,
    insecure: bool = False,
    max_batch: int = DEFAULT_MAX_BATCH,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    failure_reward: float = 0.0,
    max_concurrency: int = 64,
    max_log_records: int | None = DEFAULT_MAX_LOG_RECORDS,
    max_log_bytes: int | None = DEFAULT_MAX_LOG_BYTES,
    allowed_hosts: Iterable[str] = (),
    max_connections: int | None = None,
    header_timeout: float = DEFAULT_HEADER_TIMEOUT,
    keepalive_timeout: float = DEFAULT_KEEPALIVE_TIMEOUT,
    body_timeout: float = DEFAULT_BODY_TIMEOUT,
    label_key: str = "label",
    stop: asyncio.Event | None = None,
    on_ready: Callable[[str, int], None] | None = None,
) -> None:
    """Serve graders over HTTP until ``stop`` is set (or the task is cancelled).

    Args:
        graders: The graders to serve.
        host: The address to bind; a non-loopback one needs a token unless ``insecure``.
        port: The port (0 picks a free one; ``on_ready`` gets the real one).
        token: The bearer token clients must send (see `create_app`).
        insecure: Allow binding a non-loopback host without a token. Requests must still be
            addressed to ``localhost`` or a loopback IP (a container's published port, an
            SSH tunnel) or to one of ``allowed_hosts``; to serve other machines, set a token.
        max_batch: See `create_app`.
        max_body_bytes: See `create_app`.
        failure_reward: See `create_app`.
        max_concurrency: See `create_app`.
        max_log_records: See `create_app`.
        max_log_bytes: See `create_app`.
        allowed_hosts: See `create_app`.
        max_connections: Most connections open at once. At the limit, a new connection
            closes the one open the longest that sent no request yet, else the one idle
            the longest (no request in progress), and is refused with
            a 503 only when every open one is handling a request. None (the default): half
            the process's open-file limit (``ulimit -n``), between 16 and 10,000.
        header_timeout: Seconds a connection has to send a complete request head, from
            when it opens or sends the first byte of its next request; then it is closed.
        keepalive_timeout: Seconds an idle keep-alive connection stays open.
        body_timeout: See `create_app`.
        label_key: See `create_app`.
        stop: Set it to shut down; requests in flight are answered first.
        on_ready: Called with the bound host and port once the server accepts requests.

    Raises:
        InvalidInputError: A non-loopback host without a token or ``insecure=True``.
    """
    if not is_loopback(host) and not (token and token.strip()) and not insecure:
        raise InvalidInputError(
            f"refusing to serve on {host!r} without a token: anyone who reaches it could run "
            "the graders (and spend their judge budget). Set a token (--token or "
            "GRADEWIRE_SERVE_TOKEN), bind 127.0.0.1, or pass --insecure"
        )
    connections = connection_settings(max_connections, header_timeout, keepalive_timeout)
    app = create_app(
        graders,
        token=token,
        max_batch=max_batch,
        max_body_bytes=max_body_bytes,
        failure_reward=failure_reward,
        max_concurrency=max_concurrency,
        max_log_records=max_log_records,
        max_log_bytes=max_log_bytes,
        allowed_hosts=allowed_hosts,
        body_timeout=body_timeout,
        label_key=label_key,
    )
    from gradewire.server._listener import listen

    await listen(
        app,
        host=host,
        port=port,
        settings=connections,
        stop=stop or asyncio.Event(),
        on_ready=on_ready,
    )


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (or ``localhost``)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _require_aiohttp() -> None:
    try:
        import aiohttp.web  # noqa: F401 - only whether it is there
    except ImportError:
        raise MissingDependencyError(
            "aiohttp", extra="serve", purpose="serve graders over HTTP"
        ) from None
