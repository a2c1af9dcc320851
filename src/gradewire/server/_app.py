"""The reward server's aiohttp application (imported only once aiohttp is known to be there)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from aiohttp import hdrs, web

from gradewire.core._errors import GradewireError
from gradewire.core._grader import BaseGrader
from gradewire.core._thread import StringThread
from gradewire.server._connections import answer_in_time, within
from gradewire.server._middlewares import (
    LOGGED,
    SETTINGS,
    TOO_DEEP,
    bearer_auth,
    errors,
    json_answer,
    log_line,
    this_machine_only,
)
from gradewire.server._nemo_gym import verify_answer, verify_thread
from gradewire.server._protocol import (
    RequestError,
    batch_request,
    grade_request,
    logs_answer,
    openrlhf_answer,
    openrlhf_request,
    outcome_answer,
    pick_grader,
)
from gradewire.server._settings import ServerSettings
from gradewire.server._slots import GradingSlots

__all__ = ["GRADERS", "SLOTS", "build_app"]

_T = TypeVar("_T")

SLOTS = web.AppKey("gradewire_grading_slots", GradingSlots)
GRADERS = web.AppKey("gradewire_graders", Mapping[str, BaseGrader])


def build_app(graders: Mapping[str, BaseGrader], settings: ServerSettings) -> web.Application:
    """The application: routes, auth and error middlewares, the body size cap."""
    app = web.Application(
        client_max_size=settings.max_body_bytes,
        middlewares=[answer_in_time(settings.body_timeout), errors, this_machine_only, bearer_auth],
    )
    app[SETTINGS] = settings
    app[GRADERS] = graders
    app[SLOTS] = GradingSlots(settings.max_concurrency)
    app[LOGGED] = set()
    app.router.add_get("/health", _health)
    app.router.add_get("/v1/graders", _graders)
    app.router.add_post("/v1/grade", _grade)
    app.router.add_post("/v1/grade_batch", _grade_batch)
    app.router.add_post("/get_reward", _get_reward)
    app.router.add_post("/verify", _verify)
    app.router.add_get("/v1/logs", _logs)
    app.router.add_post("/v1/logs/clear", _clear_logs)
    return app


# Objects and lists one request may hold: some 64 MB once read, as many as 1,000 rollouts of
# a long conversation with tool calls each need several times over.
MAX_CONTAINERS = 1_000_000


async def _body(request: web.Request, *, optional: bool = False) -> Any:
    settings = request.app[SETTINGS]
    # Only JSON: an HTML form or a preflight-free fetch() from a web page cannot send it.
    if request.content_type != "application/json":
        sent = request.headers.get(hdrs.CONTENT_TYPE)
        shown = f"Content-Type {sent[:100]!r}" if sent else "no Content-Type"
        raise RequestError(
            415,
            f"send the body as JSON with 'Content-Type: application/json' (this request had "
            f"{shown})",
        )
    if request.content_length is not None and request.content_length > settings.max_body_bytes:
        raise web.HTTPRequestEntityTooLarge(
            max_size=settings.max_body_bytes, actual_size=request.content_length
        )
    try:
        if request.content.is_eof():  # all of it is here already: reading cannot wait
            raw = await request.read()
        else:
            raw = await within(settings.body_timeout, request.read())
    except web.RequestPayloadError:
        # Its message quotes nothing of the request today, but is aiohttp's to change.
        raise RequestError(
            400,
            "the request body could not be read: its chunked framing or Content-Encoding "
            "is broken; send the JSON as is, with a Content-Length",
        ) from None
    except asyncio.TimeoutError:
        raise RequestError(
            408,
            f"the request body did not arrive within {settings.body_timeout:g} s; send it "
            "faster, or start the server with a larger --body-timeout",
        ) from None
    if not raw:
        if optional:
            return {}
        raise RequestError(400, "the request has no body; send a JSON object")
    # Python holds each JSON object or array in 56 bytes or more, from 2 bytes of text: a
    # body within the size limit made of "{}," would take some 30 times its size to read.
    containers = raw.count(b"{") + raw.count(b"[")
    if containers > MAX_CONTAINERS:
        raise RequestError(
            413,
            f"the body holds more than {MAX_CONTAINERS:,} JSON objects and lists ('{{' and "
            "'[' counted, inside strings too); send smaller batches",
        )
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, ValueError) as exc:
        raise RequestError(400, f"the body is not valid JSON: {exc}") from None
    except RecursionError:
        raise RequestError(400, TOO_DEEP) from None


def _read(request: web.Request, read: Callable[[], _T]) -> _T:
    """Run a request reader; what it did not foresee is a 422 and one log line, not a 500."""
    try:
        return read()
    except GradewireError as exc:
        if isinstance(exc, RequestError):
            raise
        raise RequestError(422, str(exc)) from None
    except RecursionError:
        raise RequestError(400, TOO_DEEP) from None
    except Exception as exc:
        detail = f"{type(exc).__name__}: {exc}"[:300]
        log_line(request, f"unreadable request ({detail})")
        raise RequestError(
            422,
            f"the request could not be read ({detail}); check it against the shape "
            f"{request.path} takes",
        ) from None


async def _health(request: web.Request) -> web.Response:
    return json_answer({"status": "ok"})


async def _graders(request: web.Request) -> web.Response:
    listed = []
    for key, grader in request.app[GRADERS].items():
        spec = getattr(grader, "spec", None)
        listed.append(
            {
                "key": key,
                "class": type(grader).__name__,
                "spec": spec if isinstance(spec, Mapping) else None,
            }
        )
    return json_answer({"graders": listed})


async def _grade(request: web.Request) -> web.Response:
    graders = request.app[GRADERS]
    data = await _body(request)
    grader, thread = _read(request, lambda: grade_request(data, graders))
    [outcome] = await request.app[SLOTS].attempt_all(grader, [thread])
    return json_answer(outcome_answer(outcome))


async def _grade_batch(request: web.Request) -> web.Response:
    settings, graders = request.app[SETTINGS], request.app[GRADERS]
    data = await _body(request)
    grader, threads = _read(request, lambda: batch_request(data, graders, settings.max_batch))
    outcomes = await request.app[SLOTS].attempt_all(grader, threads)
    return json_answer({"grades": [outcome_answer(outcome) for outcome in outcomes]})


async def _get_reward(request: web.Request) -> web.Response:
    settings, graders = request.app[SETTINGS], request.app[GRADERS]
    data = await _body(request)

    def read() -> tuple[BaseGrader, list[StringThread], list[bool]]:
        name = request.query.get("grader")
        if name is None and isinstance(data, Mapping):
            name = data.get("grader")
        grader = pick_grader(graders, name)
        return grader, *openrlhf_request(data, settings.max_batch, settings.label_key)

    grader, threads, mismatched = _read(request, read)
    outcomes = await request.app[SLOTS].attempt_all(grader, threads)
    return json_answer(openrlhf_answer(outcomes, mismatched, settings.failure_reward))


async def _verify(request: web.Request) -> web.Response:
    settings, graders = request.app[SETTINGS], request.app[GRADERS]
    data = await _body(request)

    def read() -> tuple[BaseGrader, StringThread]:
        # NeMo Gym posts the task's own fields beside the exchange, so the grader is named
        # in the query only (or is the server's one grader).
        return pick_grader(graders, request.query.get("grader")), verify_thread(data)

    grader, thread = _read(request, read)
    [outcome] = await request.app[SLOTS].attempt_all(grader, [thread])
    return json_answer(verify_answer(data, outcome, settings.failure_reward))


async def _logs(request: web.Request) -> web.Response:
    if "clear" in request.query:
        # A GET changes nothing: a page can make a browser send one (<img src=...>).
        raise RequestError(
            422,
            "GET /v1/logs only reads the logs; to read and clear them, POST /v1/logs/clear "
            "with 'Content-Type: application/json'",
        )
    settings = request.app[SETTINGS]
    return json_answer(
        logs_answer(request.app[GRADERS].values(), clear=False, max_bytes=settings.max_log_bytes)
    )


async def _clear_logs(request: web.Request) -> web.Response:
    data = await _body(request, optional=True)
    if data != {}:
        raise RequestError(
            422, "POST /v1/logs/clear takes no fields: send an empty body or {} as JSON"
        )
    settings = request.app[SETTINGS]
    return json_answer(
        logs_answer(request.app[GRADERS].values(), clear=True, max_bytes=settings.max_log_bytes)
    )
