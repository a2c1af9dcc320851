"""Close connection pools when the event loop they belong to shuts down.

Connections belong to the event loop that opened them, and a model may be used from many loops
(`run_sync` makes a fresh one per call). Each pool is registered with its loop; a started async
generator per loop closes them all from the loop's ``shutdown_asyncgens()``, which
`asyncio.run`, `run_sync`, `asyncio.Runner` and pytest-asyncio call before closing a loop. The
pools are held until then (or until `forget` and an explicit close), so a model that is dropped
early never leaves a close half done as the loop goes down.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import weakref
from collections.abc import AsyncGenerator
from typing import Protocol

__all__ = ["Closeable", "close_with_loop", "forget"]

logger = logging.getLogger("gradewire")


class Closeable(Protocol):
    async def aclose(self) -> None: ...


class _LoopCloser:
    __slots__ = ("generator", "items")

    def __init__(self) -> None:
        self.items: list[Closeable] = []
        self.generator: AsyncGenerator[None, None] | None = None


_closers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopCloser] = (
    weakref.WeakKeyDictionary()
)
_lock = threading.Lock()


async def _close_at_shutdown(closer: _LoopCloser) -> AsyncGenerator[None, None]:
    try:
        yield
    finally:
        while closer.items:
            item = closer.items.pop()
            try:
                await item.aclose()
            except Exception as exc:  # one failing pool must not keep the others open
                logger.debug("gradewire: closing %r at loop shutdown failed: %s", item, exc)


async def close_with_loop(item: Closeable) -> None:
    """Close ``item`` when the running event loop shuts down."""
    loop = asyncio.get_running_loop()
    with _lock:
        closer = _closers.get(loop)
        start = closer is None
        if closer is None:
            closer = _closers[loop] = _LoopCloser()
        closer.items.append(item)
    if start:
        generator = closer.generator = _close_at_shutdown(closer)
        # Started here, so the loop's first-iteration hook registers it for shutdown.
        await generator.__anext__()


def forget(item: Closeable) -> None:
    """Stop closing ``item`` with the running loop (its owner closes it now)."""
    closer = _closers.get(asyncio.get_running_loop())
    if closer is not None:
        with _lock:
            if item in closer.items:
                closer.items.remove(item)
