"""The endpoint limiter: a place is never lost or taken twice when a waiting call is cancelled."""

from __future__ import annotations

import asyncio

import pytest

from gradewire.http._endpoint_state import Limiter


async def test_a_waiter_cancelled_before_a_release_reaches_it_leaves_quietly() -> None:
    # The task is cancelled, then a release pops its (cancelled) future before the task
    # resumes: the waiter is no longer queued when the task handles its cancellation.
    limiter = Limiter(1, asyncio.get_running_loop())
    await limiter.acquire()
    waiting = asyncio.ensure_future(limiter.acquire())
    await asyncio.sleep(0)  # the second call is queued
    waiting.cancel()  # its future is cancelled now; the task resumes at the next turn
    limiter.release()
    with pytest.raises(asyncio.CancelledError):
        await waiting  # a ValueError ('not in deque') before
    assert limiter.active == 0
    assert limiter.try_acquire()


async def test_a_place_handed_to_a_cancelled_waiter_goes_back() -> None:
    limiter = Limiter(1, asyncio.get_running_loop())
    await limiter.acquire()
    waiting = asyncio.ensure_future(limiter.acquire())
    await asyncio.sleep(0)
    limiter.release()  # handed over: the waiter's future is done
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert limiter.active == 0
