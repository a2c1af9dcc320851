"""gather_all: run awaitables concurrently, and cancel the rest when one fails."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable
from typing import TypeVar

__all__ = ["gather_all"]

T = TypeVar("T")


async def gather_all(awaitables: Iterable[Awaitable[T]]) -> list[T]:
    """Run concurrently, results in order; on the first failure cancel the rest and raise it.

    Unlike `asyncio.gather`, calls still in flight when one fails are cancelled instead of
    left running (and paid for) in the background.
    """
    tasks = [asyncio.ensure_future(awaitable) for awaitable in awaitables]
    if not tasks:
        return []
    try:
        _, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    except BaseException:
        pending = set(tasks)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        raise
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.gather(*pending, return_exceptions=True)
    failure: BaseException | None = None
    for task in tasks:
        # Reading every exception marks it retrieved, so asyncio logs nothing about it.
        if not task.cancelled() and task.exception() is not None and failure is None:
            failure = task.exception()
    if failure is not None:
        raise failure
    return [task.result() for task in tasks]
