"""Serve an application on a TCP port, with the connection rules of `_connections`."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
from collections.abc import Callable
from typing import Any

from aiohttp import web

from gradewire.server._connections import Connections
from gradewire.server._log_limit import AiohttpLog, LogLimiter
from gradewire.server._settings import ServerSettings, default_max_connections

__all__ = ["listen"]

logger = logging.getLogger("gradewire")

# The errors of accept() that mean "out of file descriptors or memory": asyncio logs a
# traceback for each (128 per event-loop pass on Python 3.11), megabytes a second.
_OUT_OF_RESOURCES = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
_BACKLOG = 128  # also how many connections asyncio accepts per event-loop pass
_CLOSE_WAIT_S = 5.0


async def listen(
    app: web.Application,
    *,
    host: str,
    port: int,
    settings: ServerSettings,
    stop: asyncio.Event,
    on_ready: Callable[[str, int], None] | None,
) -> None:
    """Serve ``app`` on ``host:port`` until ``stop`` is set; requests in flight are answered.

    The connections follow ``settings``' ``max_connections``, ``header_timeout`` and
    ``keepalive_timeout``.
    """
    limit = settings.max_connections
    max_connections = default_max_connections() if limit is None else limit
    log = LogLimiter(logger)
    # aiohttp's keep-alive timer closes idle connections; the header deadline and the cap
    # are the Connections' own. access_log=None: one line per request is not logged.
    options: dict[str, Any] = {
        "access_log": None,
        "keepalive_timeout": settings.keepalive_timeout,
        "logger": AiohttpLog(log),
    }
    runner = web.AppRunner(app, **options)
    await runner.setup()
    loop = asyncio.get_running_loop()
    previous = loop.get_exception_handler()

    def quiet_accept_errors(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if isinstance(exc, OSError) and exc.errno in _OUT_OF_RESOURCES:
            log.log(
                "accept-failure",
                logging.ERROR,
                "gradewire serve: cannot accept a connection (%s); raise the open-file limit "
                "(ulimit -n) or lower --max-connections (now %d)",
                exc.strerror,
                max_connections,
            )
        elif previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    loop.set_exception_handler(quiet_accept_errors)
    server: asyncio.Server | None = None
    deadlines: asyncio.Future[None] | None = None
    try:
        assert runner.server is not None
        connections = Connections(
            runner.server,
            max_connections=max_connections,
            header_timeout=settings.header_timeout,
            handler_options=options,
            log=log,
        )
        deadlines = asyncio.ensure_future(connections.enforce_head_deadline())
        server = await loop.create_server(connections, host, port, backlog=_BACKLOG)
        if on_ready is not None:
            bound = server.sockets[0].getsockname()
            on_ready(str(bound[0]), int(bound[1]))
        await stop.wait()
    finally:
        if server is not None:
            server.close()
        if deadlines is not None:
            deadlines.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await deadlines
        await runner.cleanup()  # answers requests in flight, then closes every connection
        if server is not None:
            try:
                await asyncio.wait_for(server.wait_closed(), _CLOSE_WAIT_S)
            except asyncio.TimeoutError:
                logger.warning("gradewire serve: connections still open at shutdown")
        if loop.get_exception_handler() is quiet_accept_errors:
            loop.set_exception_handler(previous)
        log.flush()
