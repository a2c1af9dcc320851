"""The `atexit` hook that closes a `BackgroundSink` which a script forgot to close."""

from __future__ import annotations

import atexit
import functools
import logging
from typing import Protocol

from gradewire.core._errors import SinkError

__all__ = ["ExitHook", "register_exit_hook", "unregister_exit_hook"]

logger = logging.getLogger("gradewire")

ExitHook = functools.partial[None]
"""A registered hook, kept by its sink so that `close()` can unregister it."""


class _Closeable(Protocol):
    def _close(self, delivery_timeout: float, stop_timeout: float) -> None: ...


def _close_at_exit(sink: _Closeable, timeout: float) -> None:
    try:
        sink._close(timeout, timeout)
    except SinkError:
        logger.exception("closing %r at interpreter exit failed", sink)


def register_exit_hook(sink: _Closeable, timeout: float | None) -> ExitHook | None:
    """Close ``sink`` at interpreter exit, giving delivery and then its close ``timeout`` each.

    Registers nothing (and returns None) when ``timeout`` is None.
    """
    if timeout is None:
        return None
    # A strong reference: an instance dropped without close() still has a running
    # worker and pending entries, which the hook must reach at exit.
    hook = functools.partial(_close_at_exit, sink, timeout)
    atexit.register(hook)
    return hook


def unregister_exit_hook(hook: ExitHook | None) -> None:
    if hook is not None:
        atexit.unregister(hook)
