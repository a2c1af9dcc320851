"""The reward server's JSON answers and middlewares: who may call, how failures look."""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Any

from aiohttp import hdrs, http_exceptions, web

from gradewire.server._hosts import is_loopback_host, is_loopback_origin
from gradewire.server._protocol import RequestError, jsonable
from gradewire.server._settings import ServerSettings

__all__ = [
    "LOGGED",
    "SETTINGS",
    "TOO_DEEP",
    "bearer_auth",
    "error_answer",
    "errors",
    "json_answer",
    "log_line",
    "malformed_request",
    "this_machine_only",
]

logger = logging.getLogger("gradewire")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


SETTINGS = web.AppKey("gradewire_settings", ServerSettings)
# Exception types whose traceback was logged once already (then one line each).
LOGGED = web.AppKey("gradewire_logged_failures", set)
_OPEN_PATHS = frozenset({"/health"})
_TOKEN_ADVICE = (
    "start the server with a token (--token or GRADEWIRE_SERVE_TOKEN) to serve other hosts, "
    "and send 'Authorization: Bearer <token>' (for a client that cannot send one, list the "
    "host name it uses with --allow-host)"
)
TOO_DEEP = (
    "the request is nested too deeply to read (lists or objects within each other, "
    "metadata included); flatten it"
)


def json_answer(
    data: Any, status: int = 200, headers: Mapping[str, str] | None = None
) -> web.Response:
    """``data`` as strict JSON (NaN, inf and odd objects made JSON first), never a 500."""
    try:
        text = json.dumps(data, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        text = json.dumps(jsonable(data), ensure_ascii=False)
    try:
        body = text.encode()
    except UnicodeEncodeError:  # lone surrogates from a client: replaced, never a 500
        body = text.encode("utf-8", "replace")
    return web.Response(
        body=body,
        status=status,
        content_type="application/json",
        headers=headers,
    )


_NOT_READ = (
    "; the request was not read (header values are not repeated in answers or logs). "
    "Send valid HTTP/1.1, as any HTTP client library does"
)


def malformed_request(exc: BaseException | None) -> str:
    """The answer to a request aiohttp could not parse; never a byte of the request."""
    if isinstance(exc, http_exceptions.LineTooLong):
        what = "a request line or header line is too long"
    elif isinstance(exc, http_exceptions.BadStatusLine):
        what = "the request line is not 'METHOD /path HTTP/1.1'"
    elif isinstance(exc, http_exceptions.InvalidURLError):
        what = "the request target is not a valid URL path"
    else:
        what = "a header (its name, its value, Content-Length or Transfer-Encoding) is malformed"
    return f"malformed HTTP request: {what}{_NOT_READ}"


def error_answer(
    status: int, message: str, headers: Mapping[str, str] | None = None
) -> web.Response:
    """The ``{"error": message}`` answer every failure gets."""
    return json_answer({"error": message}, status, headers)


@web.middleware
async def errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every failure as a JSON ``{"error": message}``, never an HTML page or a traceback."""
    try:
        return await handler(request)
    except RequestError as exc:
        return error_answer(exc.status, exc.message)
    except web.HTTPRequestEntityTooLarge:
        return _too_large(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        if isinstance(exc.__cause__, http_exceptions.HttpProcessingError):
            # A parser error handed to the middlewares (aiohttp 4 does): its text quotes
            # the offending header.
            return error_answer(exc.status, malformed_request(exc.__cause__))
        message = exc.text if exc.text and not exc.text.startswith(f"{exc.status}:") else ""
        return error_answer(
            exc.status, message or f"{exc.reason} ({request.method} {request.path})"
        )
    except RecursionError:
        # Raised by client data nested deeper than anything walking it can follow.
        log_line(request, "a request nested too deeply to handle")
        return error_answer(400, TOO_DEEP)
    except Exception as exc:
        logged = request.app[LOGGED]
        if type(exc) in logged:
            # A bug met by every request must not flood the log with one traceback each.
            log_line(request, f"failed again ({type(exc).__name__}: {exc})", logging.ERROR)
        else:
            logged.add(type(exc))
            logger.exception("gradewire serve: %s %.200s failed", request.method, request.raw_path)
        return error_answer(500, f"internal error ({type(exc).__name__}); see the server log")


def log_line(request: web.Request, what: str, level: int = logging.WARNING) -> None:
    """Log one line about a request, without a traceback."""
    # One line, whatever the client sent: the raw path keeps its %-escapes, repr escapes
    # newlines, and both are cut short.
    logger.log(level, "gradewire serve: %s %.200s: %.300r", request.method, request.raw_path, what)


@web.middleware
async def this_machine_only(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Without a token, answer only requests that a page on another site cannot make.

    A site the user visits can point its own DNS name at 127.0.0.1 (DNS rebinding: the
    browser then sends that name as ``Host``) or post to the server from the page (the
    browser sends the page's ``Origin``). Neither reaches the graders; ``/health`` answers
    everyone, as with a token.
    """
    settings = request.app[SETTINGS]
    # /health tells nothing, and probes (Kubernetes...) address it by the pod's IP.
    if settings.token is not None or request.path in _OPEN_PATHS:
        return await handler(request)
    host = request.headers.get(hdrs.HOST)
    if host is None or not is_loopback_host(host, settings.allowed_hosts):
        shown = "no Host header" if host is None else f"Host {host[:100]!r}"
        return error_answer(
            403,
            f"this server has no token, so it answers only requests addressed to localhost, "
            f"127.0.0.1, [::1]{_listed(settings.allowed_hosts)} (this request: {shown}); "
            f"{_TOKEN_ADVICE}",
        )
    origin = request.headers.get(hdrs.ORIGIN)
    if origin is not None and not is_loopback_origin(origin):
        return error_answer(
            403,
            f"refused a request sent by the web page at {origin[:100]!r}: this server has no "
            f"token, so it answers only clients on this machine; {_TOKEN_ADVICE}",
        )
    return await handler(request)


def _listed(names: Collection[str]) -> str:
    return "".join(f", {name}" for name in sorted(names))


@web.middleware
async def bearer_auth(request: web.Request, handler: Handler) -> web.StreamResponse:
    """With a token, every path but ``/health`` needs ``Authorization: Bearer <token>``."""
    token = request.app[SETTINGS].token
    if token is None or request.path in _OPEN_PATHS:
        return await handler(request)
    given = request.headers.get(hdrs.AUTHORIZATION, "")
    scheme, _, value = given.partition(" ")
    try:
        # The bytes the client sent: aiohttp keeps those that are not UTF-8 as surrogates.
        sent = value.strip().encode("utf-8", "surrogateescape")
    except UnicodeError:
        sent = b""  # not bytes any client could have sent, so not the token
    # Constant-time: the comparison must not tell how much of a guess was right.
    if not (scheme.lower() == "bearer" and hmac.compare_digest(sent, token.encode())):
        return error_answer(
            401,
            "missing or wrong bearer token: send 'Authorization: Bearer <token>' with the "
            "token the server was started with (--token or GRADEWIRE_SERVE_TOKEN)",
            {"WWW-Authenticate": 'Bearer realm="gradewire"'},
        )
    return await handler(request)


def _too_large(request: web.Request) -> web.Response:
    limit = request.app[SETTINGS].max_body_bytes
    return error_answer(
        413,
        f"the request body is over this server's limit of {limit} bytes; send smaller "
        "batches, or start the server with a larger --max-body-bytes",
    )
