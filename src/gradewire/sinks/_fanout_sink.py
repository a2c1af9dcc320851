"""FanOutSink: one sink that forwards to several, so one failing sink never stops the rest."""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from typing import Any

from gradewire.core._errors import InvalidTypeError, SinkError
from gradewire.core._logging_core import LogValue
from gradewire.sinks._base_sink import BaseSink
from gradewire.sinks._sink import Sink

__all__ = ["FanOutSink"]

logger = logging.getLogger("gradewire")


class FanOutSink(BaseSink):
    """Forwards every call to every sink it holds, in order.

    Input is checked once, here, and bad input raises to the caller as with any
    `BaseSink` (steps must not decrease). After that, an exception from one sink never
    stops the others and never escapes `log`, `log_many`, `log_config` or `alert`: the
    first one of each type from each sink is logged at WARNING with its traceback, later
    ones at DEBUG, and all are counted in `errors`. `close` closes every sink, then raises one
    `SinkError` naming those that failed to close.

    The held sinks decide for themselves about ranks and table policies: a FanOutSink
    forwards on every process and sends tables as it gets them.

    Example:
        >>> sink = FanOutSink(ConsoleSink(), JsonlSink("runs/eval.jsonl"))  # doctest: +SKIP
    """

    def __init__(self, *sinks: Sink) -> None:
        """Hold ``sinks``, which receive every call in the order given.

        Raises:
            InvalidTypeError: An argument lacks ``log``, ``log_config`` or ``close``.
        """
        for i, sink in enumerate(sinks):
            if isinstance(sink, list | tuple | set | frozenset):
                raise InvalidTypeError(
                    f"FanOutSink argument {i} is a {type(sink).__name__}: pass the sinks as "
                    "separate arguments, FanOutSink(a, b), or unpack a list, FanOutSink(*sinks)"
                )
            if not isinstance(sink, Sink):
                raise InvalidTypeError(
                    f"FanOutSink argument {i} is a {type(sink).__name__}, not a sink: pass "
                    "objects with log(logs, step), log_config(config) and close()"
                )
        super().__init__(table_policy=None, all_ranks=True)
        self.sinks: tuple[Sink, ...] = sinks
        self._errors = [0] * len(sinks)
        self._warned: set[tuple[int, type[BaseException]]] = set()

    @property
    def errors(self) -> list[int]:
        """How many calls each sink failed, in the order the sinks were given."""
        return list(self._errors)

    def _call(self, i: int, what: str, call: Callable[[], object]) -> Exception | None:
        try:
            call()
        except Exception as exc:
            self._errors[i] += 1
            first = (i, type(exc)) not in self._warned
            self._warned.add((i, type(exc)))
            logger.log(
                logging.WARNING if first else logging.DEBUG,
                "%s failed to %s (%s: %s); the other sinks are unaffected%s",
                _name(i, self.sinks[i]),
                what,
                type(exc).__name__,
                exc,
                "" if first else f" ({self._errors[i]} failures so far)",
                exc_info=exc if first else None,
            )
            return exc
        return None

    def _write(self, logs: dict[str, LogValue], step: int) -> None:
        for i, sink in enumerate(self.sinks):
            # A copy each, so a sink that changes its dict cannot change what the next gets.
            self._call(i, f"log step {step}", partial(sink.log, dict(logs), step))

    def _write_many(self, entries: list[tuple[int, dict[str, LogValue]]]) -> None:
        what = f"log steps {entries[0][0]}..{entries[-1][0]}"
        for i, sink in enumerate(self.sinks):
            log_many = getattr(sink, "log_many", None)
            if callable(log_many):
                batch = [(step, dict(logs)) for step, logs in entries]
                self._call(i, what, partial(log_many, batch))
            else:
                # One call per step, so a step the sink refuses does not cost the others.
                for step, logs in entries:
                    self._call(i, f"log step {step}", partial(sink.log, dict(logs), step))

    def _write_config(self, config: dict[str, Any]) -> None:
        for i, sink in enumerate(self.sinks):
            self._call(i, "log the config", partial(sink.log_config, dict(config)))

    def _write_alert(self, title: str, text: str, tags: dict[str, str]) -> None:
        for i, sink in enumerate(self.sinks):
            alert = getattr(sink, "alert", None)
            if callable(alert):  # a sink with no such capability has nothing to mark
                self._call(i, "raise an alert", partial(alert, title, text, dict(tags)))

    def _close(self) -> None:
        failures = [
            (i, exc)
            for i, sink in enumerate(self.sinks)
            if (exc := self._call(i, "close", sink.close)) is not None
        ]
        if failures:
            listed = "; ".join(
                f"{_name(i, self.sinks[i])}: {type(exc).__name__}: {exc}" for i, exc in failures
            )
            raise SinkError(
                f"{len(failures)} of {len(self.sinks)} sinks failed to close ({listed}); the "
                "others were closed, and what a failed sink had not delivered may be lost"
            ) from failures[0][1]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(repr(s) for s in self.sinks)})"


def _name(index: int, sink: Sink) -> str:
    return f"sink {index} ({type(sink).__name__})"
