"""run_sync: the one sync entry point to gradewire's async API."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

__all__ = ["run_sync"]

_T = TypeVar("_T")


def run_sync(awaitable: Awaitable[_T]) -> _T:
    """Run an awaitable to completion from sync code and return its result.

    Works with or without a running event loop in this thread: inside one (a Jupyter
    cell, a sync callback of an async trainer) the awaitable runs on a fresh loop in a
    worker thread while this thread waits, so it must not use objects bound to the
    outer loop.

    Example:
        >>> grades = run_sync(grader.grade_many(samples))  # doctest: +SKIP
    """
    if not _loop_running():
        # Called outside the `except` block: an error from the awaitable must not carry
        # "RuntimeError: no running event loop" as its context into every traceback.
        return asyncio.run(_await(awaitable))
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="gradewire-run-sync") as pool:
        return pool.submit(asyncio.run, _await(awaitable)).result()


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


async def _await(awaitable: Awaitable[_T]) -> _T:
    return await awaitable
