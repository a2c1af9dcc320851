"""The reward server's aiohttp application (imported only once aiohttp is known to be there)."""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from gradewire._grader import BaseGrader
from gradewire._reward_protocol import (
    RequestError,
    attempt_all,
    batch_request,
    grade_request,
    jsonable,
    logs_answer,
    openrlhf_answer,
    openrlhf_request,
    outcome_answer,
    pick_grader,
)

__all__ = ["ServerSettings", "build_app"]

logger = logging.getLogger("gradewire")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True)
class ServerSettings:
    """What `create_app` was given, checked."""

    graders: Mapping[str, BaseGrader]
    token: str | None
    max_batch: int
    max_body_bytes: int
    failure_reward: float
    max_concurrency: int


_SETTINGS = web.AppKey("gradewire_settings", ServerSettings)
_OPEN_PATHS = frozenset({"/health"})


def build_app(settings: ServerSettings) -> web.Application:
    """The application: routes, auth and error middlewares, the body size cap."""
    app = web.Application(
        client_max_size=settings.max_body_bytes,
        middlewares=[_errors, _auth],
    )
    app[_SETTINGS] = settings
    app.router.add_get("/health", _health)
    app.router.add_get("/v1/graders", _graders)
    app.router.add_post("/v1/grade", _grade)
    app.router.add_post("/v1/grade_batch", _grade_batch)
    app.router.add_post("/get_reward", _get_reward)
    app.router.add_get("/v1/logs", _logs)
    return app


def _json(data: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> web.Response:
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


def _error(status: int, message: str, headers: Mapping[str, str] | None = None) -> web.Response:
    return _json({"error": message}, status, headers)


@web.middleware
async def _errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every failure as a JSON ``{"error": message}``, never an HTML page or a traceback."""
    try:
        return await handler(request)
    except RequestError as exc:
        return _error(exc.status, exc.message)
    except web.HTTPRequestEntityTooLarge:
        return _too_large(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        message = exc.text if exc.text and not exc.text.startswith(f"{exc.status}:") else ""
        return _error(exc.status, message or f"{exc.reason} ({request.method} {request.path})")
    except Exception as exc:
        logger.exception("gradewire serve: %s %s failed", request.method, request.path)
        return _error(500, f"internal error ({type(exc).__name__}); see the server log")


@web.middleware
async def _auth(request: web.Request, handler: Handler) -> web.StreamResponse:
    token = request.app[_SETTINGS].token
    if token is None or request.path in _OPEN_PATHS:
        return await handler(request)
    given = request.headers.get("Authorization", "")
    scheme, _, value = given.partition(" ")
    # Constant-time: the comparison must not tell how much of a guess was right.
    if not (
        scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), token.encode())
    ):
        return _error(
            401,
            "missing or wrong bearer token: send 'Authorization: Bearer <token>' with the "
            "token the server was started with (--token or GRADEWIRE_SERVE_TOKEN)",
            {"WWW-Authenticate": 'Bearer realm="gradewire"'},
        )
    return await handler(request)


def _too_large(request: web.Request) -> web.Response:
    limit = request.app[_SETTINGS].max_body_bytes
    return _error(
        413,
        f"the request body is over this server's limit of {limit} bytes; send smaller "
        "batches, or start the server with a larger --max-body-bytes",
    )


async def _body(request: web.Request) -> Any:
    settings = request.app[_SETTINGS]
    if request.content_length is not None and request.content_length > settings.max_body_bytes:
        raise web.HTTPRequestEntityTooLarge(
            max_size=settings.max_body_bytes, actual_size=request.content_length
        )
    raw = await request.read()
    if not raw:
        raise RequestError(400, "the request has no body; send a JSON object")
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, ValueError) as exc:
        raise RequestError(400, f"the body is not valid JSON: {exc}") from None


async def _health(request: web.Request) -> web.Response:
    return _json({"status": "ok"})


async def _graders(request: web.Request) -> web.Response:
    listed = []
    for key, grader in request.app[_SETTINGS].graders.items():
        spec = getattr(grader, "spec", None)
        listed.append(
            {
                "key": key,
                "class": type(grader).__name__,
                "spec": spec if isinstance(spec, Mapping) else None,
            }
        )
    return _json({"graders": listed})


async def _grade(request: web.Request) -> web.Response:
    settings = request.app[_SETTINGS]
    grader, thread = grade_request(await _body(request), settings.graders)
    [outcome] = await attempt_all(grader, [thread], 1)
    return _json(outcome_answer(outcome))


async def _grade_batch(request: web.Request) -> web.Response:
    settings = request.app[_SETTINGS]
    grader, threads = batch_request(await _body(request), settings.graders, settings.max_batch)
    outcomes = await attempt_all(grader, threads, settings.max_concurrency)
    return _json({"grades": [outcome_answer(outcome) for outcome in outcomes]})


async def _get_reward(request: web.Request) -> web.Response:
    settings = request.app[_SETTINGS]
    data = await _body(request)
    name = request.query.get("grader")
    if name is None and isinstance(data, Mapping):
        name = data.get("grader")
    grader = pick_grader(settings.graders, name)
    threads, mismatched = openrlhf_request(data, settings.max_batch)
    outcomes = await attempt_all(grader, threads, settings.max_concurrency)
    return _json(openrlhf_answer(outcomes, mismatched, settings.failure_reward))


async def _logs(request: web.Request) -> web.Response:
    raw = request.query.get("clear", "false").lower()
    if raw not in ("true", "false", "1", "0"):
        raise RequestError(422, f"?clear= takes true or false, not {raw!r}")
    graders = request.app[_SETTINGS].graders.values()
    return _json(logs_answer(graders, clear=raw in ("true", "1")))
