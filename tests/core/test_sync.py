import asyncio

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
