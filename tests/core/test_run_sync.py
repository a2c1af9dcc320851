import asyncio
import logging
import traceback

import pytest

from gradewire import BaseGrader, StringThread, run_sync


async def double(x: int) -> int:
    await asyncio.sleep(0)
    return 2 * x


def test_run_sync_without_a_loop():
    assert run_sync(double(21)) == 42


async def test_run_sync_inside_a_running_loop():
    # As in a notebook cell: a loop already runs in this thread.
    assert run_sync(double(4)) == 8


def test_run_sync_grades_a_batch():
    grader = BaseGrader.from_function("len", lambda s: float(len(s.last_content())))
    grades = run_sync(grader.grade_many([StringThread([("user", "abc")])]))
    assert grades[0] is not None
    assert grades[0].value == 3.0


def test_run_sync_takes_any_awaitable():
    class Ready:
        def __await__(self):
            return double(5).__await__()

    assert run_sync(Ready()) == 10


def test_an_error_carries_no_event_loop_context():
    """The error is the awaitable's alone: no "no running event loop" before it."""

    async def fail() -> None:
        raise ValueError("the real problem")

    with pytest.raises(ValueError, match="the real problem") as info:
        run_sync(fail())
    assert info.value.__context__ is None
    shown = "".join(traceback.format_exception(info.value))
    assert "no running event loop" not in shown
    assert "During handling" not in shown


def test_grade_many_warnings_show_only_the_real_error(caplog):
    def broken(sample: StringThread) -> float:
        raise KeyError("answer")

    grader = BaseGrader.from_function("broken", broken)
    with caplog.at_level(logging.WARNING, logger="gradewire"):
        run_sync(grader.grade_many([StringThread([("user", "q"), ("assistant", "a")])]))
    [record] = [r for r in caplog.records if r.exc_info]
    assert record.exc_info is not None
    shown = "".join(traceback.format_exception(*record.exc_info))
    assert "KeyError: 'answer'" in shown
    assert "no running event loop" not in shown
    assert "During handling" not in shown
