"""State that every client of one model endpoint shares on one event loop.

That is a concurrency limit, the calls in flight (for de-duplication) and a second limit of the
same size on the calls that have their request built and wait for a slot. A call past both
waits before it builds its request: handed 100,000 calls at once, a client holds 2 x
max_concurrency requests, not 100,000, and a waiting call holds a handful of objects instead of
its request and the frames that made it (which, kept for a whole wait, filled the garbage
collector's oldest generation and set off full collections that paused the loop: see
`bench/judge_throughput.py`).
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

__all__ = ["EndpointState", "Limiter", "Ticket", "declare_limit", "endpoint_state"]


class Limiter:
    """A FIFO concurrency limit whose bound can only be lowered (the strictest client wins)."""

    __slots__ = ("_loop", "_waiters", "active", "limit")

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        self.limit = limit
        self.active = 0
        self._loop = loop
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()

    def try_acquire(self) -> bool:
        """Take a place if one is free and nobody waits for one (no waiting, no coroutine)."""
        if self.active < self.limit and not self._waiters:
            self.active += 1
            return True
        return False

    async def acquire(self) -> None:
        if self.try_acquire():
            return
        waiter: asyncio.Future[None] = self._loop.create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release()  # the slot was handed over just as we were cancelled
            elif waiter in self._waiters:
                # A release that ran between the cancellation and now has already dropped
                # the cancelled waiter (and given its place back).
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


class Ticket:
    """A place taken in a `Limiter`, given back by the first `release` (later ones do nothing)."""

    __slots__ = ("_limiter",)

    def __init__(self, limiter: Limiter) -> None:
        self._limiter: Limiter | None = limiter

    def release(self) -> None:
        limiter, self._limiter = self._limiter, None
        if limiter is not None:
            limiter.release()


class EndpointState:
    """The limits and the in-flight calls of one endpoint on one loop."""

    __slots__ = ("in_flight", "limiter", "staging")

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        self.limiter = Limiter(limit, loop)
        # Calls between their start and their slot: a call past this limit waits before it
        # builds its request. A place is given back when the call gets its slot, or needs
        # none (it shares another call's answer, or the cache had it), or ends.
        self.staging = Limiter(limit, loop)
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
            state.limiter.limit = state.staging.limit = limit
        return state
