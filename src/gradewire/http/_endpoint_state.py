"""State that every client of one model endpoint shares on one event loop.

That is a concurrency limit and the calls in flight (for de-duplication).
asyncio futures belong to the loop that made them, so the state is kept per running loop: a
model used from `run_sync` (a fresh loop per call), from several threads or from a notebook
gets a working limit on each loop, and the state of a closed loop goes away with it.
"""

from __future__ import annotations

import asyncio
import collections
import threading
import weakref
from typing import Any

__all__ = ["EndpointState", "Limiter", "declare_limit", "endpoint_state"]


class Limiter:
    """A FIFO concurrency limit whose bound can only be lowered (the strictest client wins)."""

    __slots__ = ("_loop", "_waiters", "active", "limit")

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        self.limit = limit
        self.active = 0
        self._loop = loop
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()

    async def acquire(self) -> None:
        if self.active < self.limit and not self._waiters:
            self.active += 1
            return
        waiter: asyncio.Future[None] = self._loop.create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release()  # the slot was handed over just as we were cancelled
            else:
                self._waiters.remove(waiter)
            raise

    def release(self) -> None:
        if self.active <= self.limit:
            # Hand the slot straight to the next waiter: `active` stays as it is.
            while self._waiters:
                waiter = self._waiters.popleft()
                if not waiter.done():
                    waiter.set_result(None)
                    return
        self.active -= 1


class EndpointState:
    """The limit and the in-flight calls of one endpoint on one loop."""

    __slots__ = ("in_flight", "limiter")

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        self.limiter = Limiter(limit, loop)
        # Request key -> future of the call that is fetching it.
        self.in_flight: dict[str, asyncio.Future[Any]] = {}


_registry: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, EndpointState]] = (
    weakref.WeakKeyDictionary()
)
_registry_lock = threading.Lock()
# Endpoint key -> the limit each live client declared, so that a limit made on a loop starts
# at the lowest one even before the strictest client has made a call there.
_declared: dict[str, weakref.WeakKeyDictionary[object, int]] = {}


def declare_limit(key: str, client: object, limit: int) -> None:
    """Record that ``client`` (while alive) wants at most ``limit`` calls in flight on ``key``."""
    with _registry_lock:
        _declared.setdefault(key, weakref.WeakKeyDictionary())[client] = limit


def endpoint_state(loop: asyncio.AbstractEventLoop, key: str, limit: int) -> EndpointState:
    """The shared state of endpoint ``key`` on ``loop``, created on first use.

    Every client that names the same key shares one limit; when clients ask for different
    limits, the lowest one declared by a live client applies to all of them (a client made
    while calls are in flight lowers the limit for the calls that follow).
    """
    with _registry_lock:
        declared = _declared.get(key)
        if declared:
            limit = min(limit, *declared.values())
        states = _registry.get(loop)
        if states is None:
            states = _registry[loop] = {}
        state = states.get(key)
        if state is None:
            state = states[key] = EndpointState(limit, loop)
        elif limit < state.limiter.limit:
            state.limiter.limit = limit
        return state
