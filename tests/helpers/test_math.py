"""math_match and MathGrader: Math-Verify's verdicts, bounded in threads and event loops."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from math_verify import parse, verify

import gradewire as gw
from gradewire.helpers._math import math_pool

# (answer, expected): LaTeX and plain answers, right and wrong.
CASES = [
    ("The answer is $\\boxed{\\frac{1}{2}}$.", "0.5"),
    ("The answer is $\\boxed{\\frac{1}{3}}$.", "0.5"),
    ("So x = $\\sqrt{2}$", "$\\sqrt{2}$"),
    ("So x = $\\sqrt{3}$", "$\\sqrt{2}$"),
    ("Final answer: 42", "42"),
    ("Final answer: 41", "42"),
    ("$\\boxed{2\\pi}$", "$2\\pi$"),
    ("$\\boxed{x^2+2x+1}$", "$(x+1)^2$"),
    ("$\\boxed{x^2+1}$", "$(x+1)^2$"),
    ("1/4", "\\frac{1}{4}"),
    ("The set is $\\{1, 2, 3\\}$", "$\\{3, 2, 1\\}$"),
    ("$\\boxed{10\\%}$", "0.1"),
]
# Math-Verify's own timeout is SIGALRM: deciding whether 9^9^9^9 equals 5 takes sympy
# far longer than a test can wait.
HANG = ("$9^{9^{9^{9}}}$", "5")


def reference(answer: str, expected: str) -> float:
    """Math-Verify called directly, as its README does (main thread: its alarms work)."""
    gold = parse(expected) or parse(f"${expected}$")
    return 1.0 if verify(gold, parse(answer)) else 0.0


def test_matches_math_verifys_own_verdicts() -> None:
    verdicts = [reference(answer, expected) for answer, expected in CASES]
    assert 0.0 in verdicts
    assert 1.0 in verdicts
    assert [gw.math_match(a, e) for a, e in CASES] == verdicts


def test_numbers_as_expected_and_any_answer_type() -> None:
    assert gw.math_match("It is 12", 12) == 1.0
    assert gw.math_match(0.25, "\\frac{1}{4}") == 1.0


def test_unreadable_answer_and_reference_are_parse_errors_not_zeros() -> None:
    with pytest.raises(gw.helpers.MathParseError) as caught:
        gw.math_match("I do not know", "42")
    assert caught.value.side == "answer"
    assert isinstance(caught.value, gw.GradingError)
    assert caught.value.log_fields == {"math_parse_error": 1}  # type: ignore[attr-defined]
    with pytest.raises(gw.helpers.MathParseError) as caught:
        gw.math_match("42", "")
    assert caught.value.side == "expected"


@pytest.mark.parametrize("timeout", [0, -1, float("nan"), float("inf")])
def test_refuses_a_timeout_that_bounds_nothing(timeout: float) -> None:
    with pytest.raises(gw.InvalidInputError, match="timeout"):
        gw.math_match("1", "1", timeout=timeout)


def test_refuses_a_missing_reference() -> None:
    with pytest.raises(gw.InvalidTypeError, match="expected"):
        gw.math_match("1", None)


def test_works_in_a_thread_pool() -> None:
    # Math-Verify's SIGALRM timeout raises ValueError outside the main thread.
    answer, expected = CASES[0]
    with pytest.raises(ValueError, match="signal"), ThreadPoolExecutor(1) as pool:
        pool.submit(verify, parse(expected), parse(answer), timeout_seconds=5).result()
    verdicts = [reference(a, e) for a, e in CASES]
    with ThreadPoolExecutor(6) as pool:
        got = list(pool.map(lambda case: gw.math_match(*case), CASES * 2))
    assert got == verdicts * 2


def test_a_hang_is_timed_out_the_worker_replaced_and_the_next_call_works() -> None:
    pool = math_pool()
    gw.math_match("1", "1")  # a worker is up
    replaced = pool.replaced
    with pytest.raises(gw.helpers.MathTimeoutError) as caught:
        gw.math_match(*HANG, timeout=1.0)
    assert caught.value.timeout == 1.0
    assert caught.value.log_fields == {"math_timeout": 1}  # type: ignore[attr-defined]
    assert pool.replaced == replaced + 1
    assert gw.math_match("$\\frac{6}{8}$", "0.75") == 1.0


def test_the_timeout_holds_off_the_main_thread() -> None:
    errors: list[BaseException] = []

    def run() -> None:
        try:
            gw.math_match(*HANG, timeout=1.0)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(60)
    assert not thread.is_alive()
    assert len(errors) == 1
    assert isinstance(errors[0], gw.helpers.MathTimeoutError)


def test_math_grader_counts_each_outcome_apart_in_asyncio() -> None:
    def sample(answer: str, expected: str | None = "3/4") -> gw.StringThread:
        metadata = {} if expected is None else {"answer": expected}
        return gw.StringThread([("user", "1/2 + 1/4?"), ("assistant", answer)], metadata)

    grader = gw.MathGrader("math", timeout=1.0)
    samples = [
        sample("$\\boxed{\\frac{3}{4}}$"),  # right
        sample("0.75"),  # right
        sample("$\\boxed{\\frac{2}{3}}$"),  # wrong
        sample("no idea"),  # unreadable: 0.0, counted
        sample(HANG[0], HANG[1]),  # overran: an error
        sample("0.75", None),  # no reference: abstains
        sample("0.75", ""),  # unreadable reference: an error
    ]

    async def main() -> list[gw.Grade | None]:
        # The event loop keeps running while checks wait on their workers.
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        ticker = asyncio.create_task(tick())
        grades = await grader.grade_many(samples)
        ticker.cancel()
        assert ticks > 10
        return grades

    grades = asyncio.run(main())
    assert [g.value if g else None for g in grades] == [1.0, 1.0, 0.0, 0.0, None, None, None]
    logs = grader.get_logs()
    assert logs["score/count"] == 4
    assert logs["score/mean"] == 0.5
    assert logs["unreadable_answer/mean"] == 0.25  # one of the four scored
    assert logs["score/error_count"] == 2
    assert logs["score/timeout_count"] == 1  # a timeout outcome, as on every grader
    assert logs["math_parse_error/count"] == 1
    assert logs["score/abstained_count"] == 1


async def test_math_grader_timeout_bounds_the_grade_and_kills_the_check() -> None:
    grader = gw.MathGrader("math", timeout=1.0)
    assert grader.timeout == 1.0
    pool = math_pool()
    thread = gw.StringThread([("user", "?"), ("assistant", HANG[0])], {"answer": HANG[1]})
    replaced = pool.replaced
    # Called directly, the grade is bounded by the same timeout, and is a timeout outcome.
    with pytest.raises(gw.GradeTimeoutError):
        await grader.grade(thread)
    assert pool.replaced == replaced + 1  # the worker computing it was killed
    grader.timeout = 0.5  # one attribute: the bound of the grade and of its check
    assert await grader.grade_many([thread]) == [None]
    assert grader.get_logs()["score/timeout_count"] == 1
    assert pool.replaced == replaced + 2
    right = gw.StringThread([("user", "?"), ("assistant", "0.75")], {"answer": "3/4"})
    assert (await grader.grade(right)).value == 1.0


def test_math_timeout_error_is_a_grade_timeout() -> None:
    with pytest.raises(gw.GradeTimeoutError) as caught:
        gw.math_match(*HANG, timeout=0.5)
    assert isinstance(caught.value, gw.helpers.MathTimeoutError)
    assert caught.value.seconds == 0.5
    grader = gw.BaseGrader.from_function("fn", lambda s: gw.math_match(*HANG, timeout=0.5))
    assert asyncio.run(grader.grade_many([gw.StringThread([("user", "?")])])) == [None]
    logs = grader.get_logs()
    assert logs["score/timeout_count"] == 1
    assert logs["math_timeout/count"] == 1


def test_unreadable_can_be_an_error() -> None:
    grader = gw.MathGrader("math", unreadable="error")
    thread = gw.StringThread([("user", "?"), ("assistant", "no idea")], {"answer": "1"})
    assert gw.run_sync(grader(thread)) is None
    logs = grader.get_logs()
    assert logs["score/error_count"] == 1
    assert logs["math_parse_error/count"] == 1


def test_a_script_without_a_main_guard_is_not_run_again_by_the_workers(tmp_path) -> None:
    # multiprocessing's spawn would re-import __main__ in every worker: the workers are
    # fresh interpreters running their own script instead.
    marker = tmp_path / "runs.txt"
    script = tmp_path / "train.py"
    script.write_text(
        "import gradewire as gw\n"
        f"open({str(marker)!r}, 'a').write('run\\n')\n"
        "print(gw.math_match('$\\\\frac{1}{2}$', '0.5'))\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "1.0"
    assert marker.read_text() == "run\n"


def _workers_of(pid: int) -> list[int]:
    """The math worker processes whose parent is ``pid`` (from /proc)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as file:
                stat = file.read()
            with open(f"/proc/{name}/cmdline", "rb") as file:
                cmdline = file.read()
        except OSError:
            continue
        parent = int(stat[stat.rfind(b")") + 2 :].split()[1])
        if parent == pid and b"_math_worker.py" in cmdline:
            found.append(int(name))
    return found


def _cpu_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as file:
        stat = file.read()
    fields = stat[stat.rfind(b")") + 2 :].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat", "rb") as file:
                stat = file.read()
        except OSError:
            return True
        if stat[stat.rfind(b")") + 2 :].split()[0] == b"Z":
            return True  # dead, waiting for a reaper
        time.sleep(0.05)
    return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_worker_dies_with_its_caller_killed_mid_check() -> None:
    # The caller starts a check sympy cannot finish, and is SIGKILLed while its worker
    # computes: the worker must not run on (as an orphan of init) at full CPU.
    code = (
        "import sys, gradewire as gw\n"
        "gw.math_match('1', '1')\n"
        "print('go', flush=True)\n"
        f"gw.math_match({HANG[0]!r}, {HANG[1]!r}, timeout=600)\n"
    )
    caller = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert caller.stdout is not None
        assert caller.stdout.readline().strip() == "go"
        workers = _workers_of(caller.pid)
        assert len(workers) == 1
        worker = workers[0]
        # Kill the caller once its worker is computing the check (its CPU time grows).
        start = _cpu_ticks(worker)
        deadline = time.monotonic() + 60
        while _cpu_ticks(worker) - start < 30 and time.monotonic() < deadline:
            time.sleep(0.05)
        caller.kill()
        caller.wait(30)
        assert _gone_within(worker, 30), "the math worker outlived its killed caller"
    finally:
        caller.kill()
        caller.wait(30)
        if caller.stdout is not None:
            caller.stdout.close()


def test_a_worker_outlives_the_thread_that_started_it() -> None:
    # The death signal follows the thread that forked the worker: a worker started from
    # a short-lived thread must keep serving the process once that thread has ended.
    pool = math_pool()
    pool.close()
    thread = threading.Thread(target=gw.math_match, args=("1", "1"))
    thread.start()
    thread.join(120)
    replaced = pool.replaced
    assert gw.math_match("$\\frac{6}{8}$", "0.75") == 1.0
    assert pool.replaced == replaced
