"""A grader's timeout: a grade that never returns is a timeout of its own kind, and grading goes on.

Every wait on a grade that should time out is itself wrapped in a generous
`asyncio.wait_for`, so a missing timeout fails the test instead of hanging the suite.
"""

from __future__ import annotations

import asyncio
import math
import pickle
import subprocess
import sys
import textwrap
import threading
from typing import Any

import pytest

from gradewire import (
    BaseGrader,
    CombinedGrader,
    Grade,
    GradeTimeoutError,
    InvalidInputError,
    InvalidTypeError,
    StringThread,
)
from gradewire.core._worker_threads import abandoned_threads

GUARD = 60.0  # seconds before a test that should not hang gives up


def sample(text: str = "a") -> StringThread:
    return StringThread([("user", "q"), ("assistant", text)])


async def never(sample: StringThread) -> float:
    await asyncio.Event().wait()
    return 1.0


async def hangs_on_stuck(sample: StringThread) -> float:
    if sample.completion() == "stuck":
        await asyncio.Event().wait()
    return 1.0


async def test_a_grade_that_never_returns_times_out_and_the_batch_goes_on():
    grader = BaseGrader.from_function("slow", hangs_on_stuck)
    batch = [sample("ok"), sample("stuck"), sample("ok")]
    grades = await asyncio.wait_for(grader.grade_many(batch, timeout=0.2), GUARD)
    assert [g.value if g else None for g in grades] == [1.0, None, 1.0]
    logs = grader.get_logs()
    assert logs["score/count"] == 2
    assert logs["score/error_count"] == 1
    assert logs["score/timeout_count"] == 1
    # The grader's own call (no default) has no bound: timed out only through grade_many.
    assert grader.timeout is None


async def test_the_graders_own_timeout_wins_over_a_default():
    own = BaseGrader.from_function("own", never, timeout=0.05)
    grades = await asyncio.wait_for(own.grade_many([sample()], timeout=3600), GUARD)
    assert grades == [None]
    assert own.get_logs()["score/timeout_count"] == 1
    # ... and applies on its own, through a call of the grader and score_float_value.
    assert await asyncio.wait_for(own(sample()), GUARD) is None
    with pytest.raises(GradeTimeoutError, match=r"within its timeout of 0\.05 s"):
        await asyncio.wait_for(own.score_float_value(sample()), GUARD)
    assert own.get_logs()["score/timeout_count"] == 3


async def test_a_timeout_raised_inside_the_grade_is_an_ordinary_error():
    async def client_timeout(sample: StringThread) -> float:
        raise TimeoutError("the HTTP client gave up")

    grader = BaseGrader.from_function("http", client_timeout, timeout=30)
    assert await grader.grade_many([sample()]) == [None]
    logs = grader.get_logs()
    assert logs["score/error_count"] == 1
    assert logs["score/timeout_count"] == 0  # counted once a timeout bounded the grader


def test_timeout_count_is_absent_until_a_timeout_bounds_the_grader():
    grader = BaseGrader.from_function("plain", lambda s: 1.0)
    asyncio.run(grader.grade_many([sample()]))
    assert "score/timeout_count" not in grader.get_logs()


@pytest.mark.parametrize("bad", [0, -1.0, math.nan, math.inf])
def test_timeout_must_be_positive_and_finite(bad: float):
    with pytest.raises(InvalidInputError, match="positive, finite"):
        BaseGrader.from_function("k", never, timeout=bad)
    with pytest.raises(InvalidInputError, match="positive, finite"):
        asyncio.run(BaseGrader.from_function("k", never).grade_many([sample()], timeout=bad))


@pytest.mark.parametrize("bad", [True, "5", [1]])
def test_timeout_must_be_a_number(bad: Any):
    grader = BaseGrader.from_function("k", never)
    with pytest.raises(InvalidTypeError, match="number of seconds"):
        grader.timeout = bad


async def test_cancelling_the_caller_cancels_the_grade():
    cancelled = asyncio.Event()
    started = asyncio.Event()

    async def waits(sample: StringThread) -> float:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return 1.0

    grader = BaseGrader.from_function("w", waits, timeout=3600)
    task = asyncio.ensure_future(grader.grade_many([sample()]))
    await asyncio.wait_for(started.wait(), GUARD)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.wait_for(cancelled.wait(), GUARD)


async def test_a_sub_grader_timeout_is_skipped_or_raised_as_asked():
    fast = BaseGrader.from_function("fast", lambda s: 1.0)
    slow = BaseGrader.from_function("slow", never, timeout=0.05)
    skip = CombinedGrader("skip", [fast, slow], on_error="skip")
    grade = await asyncio.wait_for(skip.grade(sample()), GUARD)
    assert grade.value == 1.0
    logs = skip.get_logs()
    assert logs["slow/score/timeout_count"] == 1
    assert logs["skipped/mean"] == 1.0
    raised = CombinedGrader("raise", [BaseGrader.from_function("f", lambda s: 1.0), slow])
    assert await asyncio.wait_for(raised.grade_many([sample()]), GUARD) == [None]
    assert raised.get_logs()["score/timeout_count"] == 1


async def test_a_blocked_sync_function_is_abandoned_and_counted():
    release = threading.Event()
    entered = threading.Event()

    def blocks(sample: StringThread) -> float:
        entered.set()
        release.wait(GUARD)
        return 1.0

    before = abandoned_threads()
    grader = BaseGrader.from_function("blocks", blocks, timeout=0.1)
    assert await asyncio.wait_for(grader.grade_many([sample()]), GUARD) == [None]
    assert entered.is_set()
    assert grader.get_logs()["score/timeout_count"] == 1
    await asyncio.sleep(0)  # the cancellation reaches the thread's awaiting side
    assert abandoned_threads() == before + 1
    release.set()
    for _ in range(int(GUARD / 0.01)):
        if abandoned_threads() == before:
            break
        await asyncio.sleep(0.01)
    assert abandoned_threads() == before  # it returned: its worker serves again


async def test_a_measured_inline_function_goes_to_a_thread_under_a_timeout(
    monkeypatch: pytest.MonkeyPatch,
):
    from gradewire.core import _grader

    monkeypatch.setattr(_grader, "_FAST_SECONDS", 3600.0)  # every call counts as fast
    loop_thread = threading.get_ident()
    seen: list[int] = []

    def where(sample: StringThread) -> float:
        seen.append(threading.get_ident())
        return 1.0

    grader = BaseGrader.from_function("where", where)
    await grader.grade_many([sample()] * 8, max_concurrency=1)
    await grader.grade_many([sample()])
    assert seen[-1] == loop_thread  # measured fast: inline now
    await grader.grade_many([sample()], timeout=30)
    assert seen[-1] != loop_thread  # a timeout can only interrupt a thread
    assert grader.get_logs()["score/count"] == 10


def test_grade_timeout_error_pickles_with_its_fields():
    error = pickle.loads(pickle.dumps(GradeTimeoutError("judge", 2.5)))
    assert (error.grader_key, error.seconds) == ("judge", 2.5)
    assert "2.5 s" in str(error)


def test_a_process_whose_grader_hangs_in_a_thread_still_exits():
    """Abandoned threads are daemons: neither asyncio.run nor the interpreter waits for them."""
    script = textwrap.dedent(
        """
        import time
        import gradewire as gw

        def sleeps(sample):
            time.sleep(1000)

        grader = gw.BaseGrader.from_function("sleeps", sleeps, timeout=0.2)
        thread = gw.StringThread([("user", "q"), ("assistant", "a")])
        print(gw.run_sync(grader.grade_many([thread] * 3)))
        print(grader.get_logs()["score/timeout_count"])
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=GUARD
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[None,", "None,", "None]", "3"]


class Logged(BaseGrader):
    async def grade(self, sample: StringThread) -> Grade:
        await asyncio.Event().wait()
        return Grade(1.0, self.grader_key)


async def test_every_grader_takes_a_timeout_setting():
    grader = Logged("custom", timeout=0.05)
    assert grader.timeout == 0.05
    grader.timeout = 0.02
    assert await asyncio.wait_for(grader.grade_many([sample()]), GUARD) == [None]
    assert grader.get_logs()["score/timeout_count"] == 1
