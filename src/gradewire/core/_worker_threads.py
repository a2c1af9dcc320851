"""Worker threads for sync grading functions: started on demand, reused, never joined.

`asyncio.to_thread` is not used: its default executor holds ``min(32, cpus + 4)`` threads
(6 on a 2-core machine, whatever concurrency was asked for), and `asyncio.run` and the
interpreter's exit both wait for its threads, so a function that never returns would keep
the process alive after Ctrl-C. Here a call takes an idle worker or starts a new one, so
as many calls run at once as the caller lets in flight (``max_concurrency``, eval's
``--concurrency``); workers are daemon threads that end after a while idle.

Python cannot stop a thread. A call whose awaiting side gives up (a timeout, Ctrl-C) is
abandoned: its function runs on in its worker, its result is dropped, and the worker
serves again once it returns. `abandoned_threads` counts those still running.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["abandoned_threads", "call_in_thread"]

logger = logging.getLogger("gradewire")

_IDLE_SECONDS = 30.0
_RUNNING, _DONE, _ABANDONED = 0, 1, 2

_lock = threading.Lock()
_idle: list[_Worker] = []
_abandoned = 0
_warned_at = 1


def abandoned_threads() -> int:
    """How many abandoned calls of sync grading functions are still running in this process."""
    return _abandoned


class _Job:
    __slots__ = ("arg", "context", "fn", "future", "loop", "state")

    def __init__(
        self,
        fn: Callable[[Any], Any],
        arg: Any,
        loop: asyncio.AbstractEventLoop,
        future: asyncio.Future[tuple[bool, Any, float]],
    ) -> None:
        self.fn = fn
        self.arg = arg
        self.loop = loop
        self.future = future
        # As asyncio.to_thread does: the function sees the caller's context variables.
        self.context = contextvars.copy_context()
        self.state = _RUNNING

    def run(self) -> None:
        start = time.perf_counter()
        try:
            outcome: tuple[bool, Any, float] = (True, self.context.run(self.fn, self.arg), 0.0)
        except BaseException as exc:  # handed to the awaiting side, whatever it is
            outcome = (False, exc, 0.0)
        outcome = (outcome[0], outcome[1], time.perf_counter() - start)
        global _abandoned
        with _lock:
            if self.state == _ABANDONED:
                _abandoned -= 1
                return
            self.state = _DONE
        # A closed loop (RuntimeError) has nobody waiting for the result any more.
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(_settle, self.future, outcome)

    def abandon(self) -> None:
        global _abandoned, _warned_at
        with _lock:
            if self.state != _RUNNING:
                return
            self.state = _ABANDONED
            _abandoned += 1
            count = _abandoned
            # Said at the first, then at 10, 100, ... still running: each holds a thread.
            loud = count >= _warned_at
            if loud:
                _warned_at = count * 10
        if loud:
            logger.warning(
                "a sync grading function (%s) was still running when its grade was given up "
                "(a timeout or Ctrl-C); Python cannot stop a thread, so it runs on in a daemon "
                "worker thread until it returns or the process ends (%d such call(s) still "
                "running)",
                getattr(self.fn, "__qualname__", type(self.fn).__name__),
                count,
            )


def _settle(
    future: asyncio.Future[tuple[bool, Any, float]], outcome: tuple[bool, Any, float]
) -> None:
    if not future.done():
        future.set_result(outcome)


class _Worker:
    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        threading.Thread(target=self._serve, name="gradewire-sync-grader", daemon=True).start()

    def submit(self, job: _Job) -> None:
        self._jobs.put(job)

    def _serve(self) -> None:
        while True:
            try:
                job = self._jobs.get(timeout=_IDLE_SECONDS)
            except queue.Empty:
                with _lock:
                    if self in _idle:  # not taken meanwhile: retire
                        _idle.remove(self)
                        return
                continue
            job.run()
            del job  # drop the sample and result before waiting for the next call
            with _lock:
                _idle.append(self)


def _worker() -> _Worker:
    with _lock:
        if _idle:
            return _idle.pop()
    return _Worker()


def _forget_workers() -> None:
    """In a forked child: the parent's workers are not running here, so none is idle."""
    global _lock, _idle, _abandoned, _warned_at
    _lock = threading.Lock()
    _idle = []
    _abandoned = 0
    _warned_at = 1


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_workers)


async def call_in_thread(fn: Callable[[Any], Any], arg: Any) -> tuple[Any, float]:
    """``fn(arg)`` in a worker thread: its result and the seconds the call took there.

    Raises what ``fn`` raised. Cancelled (a timeout, Ctrl-C), the call is abandoned: the
    function runs on and its result is dropped.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[tuple[bool, Any, float]] = loop.create_future()
    job = _Job(fn, arg, loop, future)
    _worker().submit(job)
    try:
        ok, result, seconds = await future
    except asyncio.CancelledError:
        job.abandon()
        raise
    if not ok:
        raise result
    return result, seconds
