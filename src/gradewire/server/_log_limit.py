"""Log lines the clients can cause, at a bounded rate: a flood of them is one count."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["AiohttpLog", "LogLimiter"]


@dataclass
class _Window:
    start: float
    logged: int = 0
    left_out: int = 0


class LogLimiter:
    """At most ``burst`` lines of each kind per ``period`` seconds; the rest are counted.

    A client can make the server log (malformed requests, refused connections, a file
    limit reached): without a bound, 2,000 of them write megabytes a second. Past the
    burst, lines of that kind are only counted, and the count is logged once the period is
    over (at the next line of that kind, or at `flush`).
    """

    def __init__(
        self,
        logger: logging.Logger,
        *,
        burst: int = 5,
        period: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.logger = logger
        self.burst = burst
        self.period = period
        self._clock = clock
        self._windows: dict[str, _Window] = {}

    def log(self, kind: str, level: int, message: str, *args: object) -> None:
        """Log ``message % args`` unless lines of ``kind`` are over their rate."""
        now = self._clock()
        window = self._windows.get(kind)
        if window is None or now - window.start >= self.period:
            if window is not None:
                self._report(kind, window, now)
            window = self._windows[kind] = _Window(now)
        if window.logged < self.burst:
            window.logged += 1
            self.logger.log(level, message, *args)
        else:
            window.left_out += 1

    def flush(self) -> None:
        """Log the counts of lines left out so far (when the server stops)."""
        now = self._clock()
        for kind, window in self._windows.items():
            self._report(kind, window, now)
            window.left_out = 0

    def _report(self, kind: str, window: _Window, now: float) -> None:
        if window.left_out:
            self.logger.warning(
                "gradewire serve: %d more %s lines left out in the last %.0f s",
                window.left_out,
                kind,
                now - window.start,
            )


class AiohttpLog:
    """What aiohttp's connection code logs, as one rate-limited line each without traceback.

    Passed as aiohttp's ``logger`` handler option. aiohttp logs the offending request's
    bytes, and a traceback, for errors a client can cause at will (a body whose framing
    breaks while the server discards it): here only the error's type is kept.
    """

    def __init__(self, log: LogLimiter) -> None:
        self._log = log

    def debug(self, *args: object, **kwargs: object) -> None:
        """Aiohttp's debug lines: left out."""

    def info(self, message: str, *args: object, **kwargs: object) -> None:
        """Aiohttp's info lines: left out."""

    def warning(self, message: str, *args: object, **kwargs: object) -> None:
        self._line(logging.WARNING, message, args, kwargs)

    def error(self, message: str, *args: object, **kwargs: object) -> None:
        self._line(logging.ERROR, message, args, kwargs)

    def exception(self, message: str, *args: object, **kwargs: object) -> None:
        self._line(logging.ERROR, message, args, kwargs)

    def _line(
        self, level: int, message: str, args: tuple[object, ...], kwargs: dict[str, object]
    ) -> None:
        exc = kwargs.get("exc_info")
        detail = type(exc).__name__ if isinstance(exc, BaseException) else "no detail"
        try:
            text = message % args if args else message
        except (TypeError, ValueError):
            text = message
        self._log.log("aiohttp", level, "gradewire serve: %.200s (%s)", text, detail)
