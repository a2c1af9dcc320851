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
  that abstains or fails gets ``failure_value`` (default 0.0), is flagged in ``extra_logs``
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

The server's settings are the fields of `ServerSettings`, given to `create_app` and `serve`
whole (``settings=``) or as keywords, and to ``gradewire serve`` as flags. Each served grader
whose ``max_log_records`` is None gets the server's (default 10,000), and whose
``max_log_bytes`` is None the server's (default 16 MiB of text), so a long training run that
never clears the logs keeps memory bounded while ``/v1/logs`` figures stay exact.

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
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from typing_extensions import Unpack

from gradewire.core._errors import InvalidInputError, InvalidTypeError, MissingDependencyError
from gradewire.core._grader import BaseGrader
from gradewire.judges._certificate import gate_certificates
from gradewire.server._hosts import is_loopback
from gradewire.server._settings import (
    AppOptions,
    ServerOptions,
    ServerSettings,
    resolve_server_settings,
)

if TYPE_CHECKING:
    from aiohttp import web

__all__ = ["create_app", "serve"]

Graders = BaseGrader | Iterable[BaseGrader] | Mapping[str, BaseGrader]


def create_app(
    graders: Graders,
    *,
    settings: ServerSettings | None = None,
    **options: Unpack[AppOptions],
) -> web.Application:
    """The reward server as an `aiohttp.web.Application` (to run, mount or test).

    Each served grader whose ``max_log_records`` or ``max_log_bytes`` is None gets the
    server's, in place (after every check: a refused configuration changes no grader).

    Args:
        graders: The graders to serve, by their ``grader_key`` (or a mapping key → grader).
        settings: The server's limits and access rules (default: `ServerSettings()`); the
            connection fields (``header_timeout``, ``keepalive_timeout``,
            ``max_connections``) apply only where `serve` runs the app.
        **options: `ServerSettings` fields by name (``token=``, ``max_batch=``, ...), each
            documented there; they override ``settings``. The connection fields are
            `serve`'s keywords, not these.

    Raises:
        MissingDependencyError: aiohttp is not installed (``pip install 'gradewire[serve]'``).
        InvalidTypeError: A setting has the wrong type, or is a connection field.
        InvalidInputError: A setting is out of range, or the graders are not distinct.
    """
    _require_aiohttp()
    from gradewire.server._app import build_app

    checked = resolve_server_settings(
        settings, options, takes=AppOptions.__optional_keys__, caller="create_app"
    )
    served = _by_key(graders)
    gate_certificates(served.values(), where="the reward server")  # before spending
    # After every check: a refused configuration leaves the graders as they were.
    cap, text = checked.max_log_records, checked.max_log_bytes
    for grader in served.values():
        if cap is not None and getattr(grader, "max_log_records", None) is None:
            grader.max_log_records = cap
        if text is not None and grader.max_log_bytes is None:
            grader.max_log_bytes = text
    return build_app(served, checked)


async def serve(
    graders: Graders,
    *,
    settings: ServerSettings | None = None,
    host: str = "127.0.0.1",
    port: int = 8000,
    insecure: bool = False,
    stop: asyncio.Event | None = None,
    on_ready: Callable[[str, int], None] | None = None,
    **options: Unpack[ServerOptions],
) -> None:
    """Serve graders over HTTP until ``stop`` is set (or the task is cancelled).

    What the server is (its limits, timeouts and access rules) is a `ServerSettings`,
    given whole as ``settings`` or field by field as keywords; where and how this call
    serves (``host``, ``port``, ``insecure``, ``stop``, ``on_ready``) are its own keywords.

    Args:
        graders: The graders to serve.
        settings: The server's settings (default: `ServerSettings()`).
        host: The address to bind; a non-loopback one needs a token unless ``insecure``.
        port: The port (0 picks a free one; ``on_ready`` gets the real one).
        insecure: Allow binding a non-loopback host without a token. Requests must still be
            addressed to ``localhost`` or a loopback IP (a container's published port, an
            SSH tunnel) or to one of ``allowed_hosts``; to serve other machines, set a token.
        stop: Set it to shut down; requests in flight are answered first.
        on_ready: Called with the bound host and port once the server accepts requests.
        **options: `ServerSettings` fields by name (``token=``, ``max_concurrency=``,
            ``header_timeout=``, ...), each documented there; they override ``settings``.

    Raises:
        InvalidInputError: A non-loopback host without a token or ``insecure=True``, or a
            setting out of range.
        InvalidTypeError: A setting has the wrong type.
    """
    checked = resolve_server_settings(settings, options)
    if not is_loopback(host) and checked.token is None and not insecure:
        raise InvalidInputError(
            f"refusing to serve on {host!r} without a token: anyone who reaches it could run "
            "the graders (and spend their judge budget). Set a token (--token or "
            "GRADEWIRE_SERVE_TOKEN), bind 127.0.0.1, or pass --insecure"
        )
    app = create_app(graders, settings=checked)
    from gradewire.server._listener import listen

    await listen(
        app,
        host=host,
        port=port,
        settings=checked,
        stop=stop or asyncio.Event(),
        on_ready=on_ready,
    )


def _by_key(graders: Graders) -> dict[str, BaseGrader]:
    """The graders to serve by key, checked: distinct non-empty keys, at least one."""
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


def _require_aiohttp() -> None:
    try:
        import aiohttp.web  # noqa: F401 - only whether it is there
    except ImportError:
        raise MissingDependencyError(
            "aiohttp", extra="serve", purpose="serve graders over HTTP"
        ) from None
