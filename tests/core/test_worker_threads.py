"""Sync grading functions run concurrently in worker threads, up to the concurrency asked for.

Concurrency is shown with a `threading.Barrier`: it opens only when that many calls are
inside the function at once, so calls run one at a time would break it (after its own
timeout) and fail the test; no test measures a duration.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading

import pytest

from gradewire import BaseGrader, CombinedGrader, StringThread

GUARD = 60.0


def sample(i: int = 0) -> StringThread:
    return StringThread([("user", f"q{i}"), ("assistant", "a")])


class Tracker:
    """The most calls seen inside the function at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.inside = 0
        self.most = 0

    def enter(self) -> None:
        with self._lock:
            self.inside += 1
            self.most = max(self.most, self.inside)

    def leave(self) -> None:
        with self._lock:
            self.inside -= 1


async def test_sync_calls_run_concurrently_by_default():
    barrier = threading.Barrier(8, timeout=GUARD)

    def meets(sample: StringThread) -> float:
        barrier.wait()  # opens only with 8 calls inside at once
        return 1.0

    grader = BaseGrader.from_function("meets", meets)
    grades = await grader.grade_many([sample(i) for i in range(8)], max_concurrency=8)
    assert [g.value if g else None for g in grades] == [1.0] * 8
    assert grader.get_logs()["score/error_count"] == 0


async def test_threads_in_flight_never_exceed_max_concurrency():
    tracker = Tracker()
    barrier = threading.Barrier(4, timeout=GUARD)

    def counted(sample: StringThread) -> float:
        tracker.enter()
        try:
            barrier.wait()  # four at once, every round
            return 1.0
        finally:
            tracker.leave()

    grader = BaseGrader.from_function("counted", counted, threads=True)
    grades = await grader.grade_many([sample(i) for i in range(32)], max_concurrency=4)
    assert all(g is not None for g in grades)
    assert tracker.most == 4


async def test_threads_false_runs_one_call_at_a_time_on_the_loop():
    loop_thread = threading.get_ident()
    tracker = Tracker()
    seen: set[int] = set()

    def not_thread_safe(sample: StringThread) -> float:
        tracker.enter()
        seen.add(threading.get_ident())
        tracker.leave()
        return 1.0

    grader = BaseGrader.from_function("unsafe", not_thread_safe, threads=False)
    await grader.grade_many([sample(i) for i in range(16)], max_concurrency=16)
    assert seen == {loop_thread}
    assert tracker.most == 1


async def test_sync_sub_graders_of_a_combination_run_concurrently():
    barrier = threading.Barrier(2, timeout=GUARD)

    def meets(sample: StringThread) -> float:
        barrier.wait()
        return 1.0

    combined = CombinedGrader(
        "both", [BaseGrader.from_function("a", meets), BaseGrader.from_function("b", meets)]
    )
    assert (await combined.grade(sample())).value == 1.0


async def test_a_measured_function_goes_inline_and_back_to_threads(
    monkeypatch: pytest.MonkeyPatch,
):
    """The rule of threads=None, with its thresholds moved so the test times nothing."""
    from gradewire.core import _grader

    loop_thread = threading.get_ident()
    seen: list[int] = []

    def where(sample: StringThread) -> float:
        seen.append(threading.get_ident())
        return 1.0

    monkeypatch.setattr(_grader, "_FAST_SECONDS", 3600.0)  # every call is "fast"
    grader = BaseGrader.from_function("where", where)
    await grader.grade_many([sample(i) for i in range(8)], max_concurrency=1)
    assert loop_thread not in seen  # the 8 probe calls ran in threads
    await grader.grade_many([sample()])
    assert seen[-1] == loop_thread  # measured fast: inline
    monkeypatch.setattr(_grader, "_SLOW_INLINE_SECONDS", -1.0)  # every inline call "slow"
    for _ in range(3):
        await grader.grade_many([sample()])
        assert seen[-1] == loop_thread  # ran inline, and was measured slow ...
    monkeypatch.setattr(_grader, "_SLOW_INLINE_SECONDS", 3600.0)
    await grader.grade_many([sample(i) for i in range(16)])
    assert loop_thread not in seen[-16:]  # ... three times: threads for good
    assert grader.get_logs()["score/count"] == 28


async def test_stray_slow_calls_decide_nothing(monkeypatch: pytest.MonkeyPatch):
    """Two slow probes of eight, or two slow inline calls in a hundred, keep it inline."""
    from gradewire.core import _grader

    durations = iter([1.0, 1.0] + [0.0] * 6)  # what the probe calls "took"

    async def timed_call(fn, arg):  # type: ignore[no-untyped-def]
        return fn(arg), next(durations)

    monkeypatch.setattr(_grader, "call_in_thread", timed_call)
    loop_thread = threading.get_ident()
    seen: list[int] = []
    grader = BaseGrader.from_function("g", lambda s: seen.append(threading.get_ident()) or 1.0)
    await grader.grade_many([sample(i) for i in range(8)], max_concurrency=1)
    await grader.grade_many([sample()])
    assert seen[-1] == loop_thread  # 6 of 8 probes fast: inline
    monkeypatch.setattr(_grader, "_SLOW_INLINE_SECONDS", -1.0)
    for _ in range(2):
        await grader.grade_many([sample()])
    monkeypatch.setattr(_grader, "_SLOW_INLINE_SECONDS", 3600.0)
    await grader.grade_many([sample(i) for i in range(200)], max_concurrency=1)
    monkeypatch.setattr(_grader, "_SLOW_INLINE_SECONDS", -1.0)
    await grader.grade_many([sample()])  # a third slow call, but in a later window
    assert seen[-1] == loop_thread
    monkeypatch.setattr(_grader, "_SLOW_INLINE_SECONDS", 3600.0)
    await grader.grade_many([sample()])
    assert seen[-1] == loop_thread  # still inline


async def test_a_slow_probe_majority_keeps_the_function_in_threads(
    monkeypatch: pytest.MonkeyPatch,
):
    from gradewire.core import _grader

    monkeypatch.setattr(_grader, "_FAST_SECONDS", -1.0)  # every call is "slow"
    loop_thread = threading.get_ident()
    seen: list[int] = []
    grader = BaseGrader.from_function("slow", lambda s: seen.append(threading.get_ident()) or 1.0)
    await grader.grade_many([sample(i) for i in range(40)], max_concurrency=1)
    assert loop_thread not in seen


async def test_errors_and_context_variables_cross_the_thread():
    request = contextvars.ContextVar("request", default="none")

    def reads(sample: StringThread) -> float:
        if request.get() != "r-1":
            raise KeyError(request.get())
        raise KeyError("anwser")

    request.set("r-1")
    grader = BaseGrader.from_function("reads", reads, threads=True)
    assert await grader.grade_many([sample()]) == [None]
    logs = grader.get_logs()
    assert logs["score/error_count"] == 1
    records = [r for r in grader._logs if isinstance(r, dict) and "error" in r]
    assert records[0]["error"] == "KeyError: 'anwser'"


async def test_a_sync_function_returning_an_awaitable_is_awaited_on_the_loop():
    async def later() -> float:
        return 0.5

    grader = BaseGrader.from_function("wraps", lambda s: later(), threads=True)
    assert (await grader.grade(sample())).value == 0.5


def test_sync_graders_use_no_executor_that_would_hold_the_process():
    """The default executor would be joined by asyncio.run; the workers are daemons."""
    grader = BaseGrader.from_function("k", lambda s: 1.0, threads=True)
    seen: list[threading.Thread] = []

    def record(sample: StringThread) -> float:
        seen.append(threading.current_thread())
        return 1.0

    grader = BaseGrader.from_function("k", record, threads=True)
    asyncio.run(grader.grade_many([sample()]))
    assert seen[0].daemon
    assert seen[0].name == "gradewire-sync-grader"


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork")
def test_a_forked_child_starts_workers_of_its_own():
    """A child of fork has none of its parent's threads: idle workers there would never run."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        """
        import asyncio, os, sys
        import gradewire as gw

        grader = gw.BaseGrader.from_function("k", lambda s: 1.0, threads=True)
        thread = gw.StringThread([("user", "q"), ("assistant", "a")])
        asyncio.run(grader.grade_many([thread] * 4))  # leaves idle workers behind
        pid = os.fork()
        if pid == 0:
            grades = asyncio.run(asyncio.wait_for(grader.grade_many([thread] * 4), 30))
            os._exit(0 if [g.value for g in grades] == [1.0] * 4 else 3)
        _, status = os.waitpid(pid, 0)
        sys.exit(os.waitstatus_to_exitcode(status))
        """
    )
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", script],
        capture_output=True,
        text=True,
        timeout=GUARD,
    )
    assert done.returncode == 0, done.stderr  # 3: wrong grades; a hang: the timeout
