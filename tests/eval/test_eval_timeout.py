"""Eval and timeouts: a grade that never returns is a timeout outcome, and Ctrl-C always works.

The subprocess tests wait for the process with a generous timeout: a hang fails the test
(and the process is killed) instead of hanging the suite.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gradewire import BaseGrader, StringThread
from gradewire.eval import GradeOutcome, run_eval
from gradewire.specs import build_grader

TESTS = Path(__file__).parents[1]
GRADEWIRE = [sys.executable, "-m", "gradewire"]
GUARD = 60.0


def env() -> dict[str, str]:
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(TESTS), environment.get("PYTHONPATH")])
    )
    return environment


def data_file(tmp_path: Path, n: int) -> Path:
    path = tmp_path / "data.jsonl"
    rows = [
        {"id": f"q{i}", "prompt": f"What is {i} + {i}?", "completion": str(2 * i), "answer": 2 * i}
        for i in range(n)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def grader_file(tmp_path: Path, function: str, extra: str = "") -> Path:
    path = tmp_path / "graders.toml"
    path.write_text(
        f'[[graders]]\ntype = "custom"\nkey = "g"'
        f'\nfunction = "support.eval_graders:{function}"\n{extra}',
        encoding="utf-8",
    )
    return path


def results(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]


def hanging() -> BaseGrader:
    return build_grader(
        {"type": "custom", "key": "g", "function": "support.eval_graders:hangs_on_even_answers"},
        trust_code=True,
    )


async def test_a_grade_that_never_returns_is_a_timeout_and_the_run_goes_on(tmp_path: Path):
    out = tmp_path / "run"
    result = await asyncio.wait_for(
        run_eval(data_file(tmp_path, 6), [hanging()], out, timeout=0.2), GUARD
    )
    assert not result.outcome.interrupted
    lines = {line["id"]: line["grades"]["g"] for line in results(out)}
    assert len(lines) == 6
    stuck = {i for i, grade in lines.items() if grade["status"] == "error"}
    assert stuck == {"q0", "q2", "q4"}  # answers 0, 4, 8
    for key in stuck:
        assert lines[key]["kind"] == "timeout"
        assert "within its timeout of 0.2 s" in lines[key]["message"]
        assert GradeOutcome.from_json(lines[key]).kind == "timeout"
    assert all("kind" not in lines[i] for i in lines.keys() - stuck)
    (summary,) = result.summaries
    assert (summary.n, summary.errors, summary.timeouts) == (3, 3, 3)
    written = json.loads((out / "summary.json").read_text())
    assert written["graders"][0]["timeouts"] == 3
    assert written["metrics"]["g/score/timeout_count"] == 3


async def test_the_graders_own_timeout_wins_and_retry_errors_regrades_timeouts(tmp_path: Path):
    data = data_file(tmp_path, 4)
    out = tmp_path / "run"
    grader = hanging()
    # Long enough that a sample which returns at once never times out on a loaded machine.
    grader.timeout = 1.0
    first = await asyncio.wait_for(run_eval(data, [grader], out, timeout=3600), GUARD)
    assert first.summaries[0].timeouts == 2  # the grader's 1 s, not the default
    again = await asyncio.wait_for(run_eval(data, [grader], out, retry_errors=True), GUARD)
    assert again.outcome.graded == 2  # only the timed-out samples were graded again
    assert again.summaries[0].timeouts == 2


def test_timeout_outcomes_read_back_and_old_lines_have_no_kind():
    line = {"status": "error", "spec_hash": "h", "message": "m", "kind": "timeout"}
    assert GradeOutcome.from_json(line).to_json()["kind"] == "timeout"
    assert GradeOutcome.from_json({"status": "error", "spec_hash": "h"}).kind is None
    with pytest.raises(ValueError, match="kind"):
        GradeOutcome.from_json({**line, "kind": 3})


def test_eval_cli_timeout_is_the_default_for_graders_that_set_none(tmp_path: Path):
    out = tmp_path / "run"
    graders = str(grader_file(tmp_path, "hangs_on_even_answers"))
    args = ["eval", str(data_file(tmp_path, 4)), "--graders", graders, "--out", str(out)]
    done = subprocess.run(
        [*GRADEWIRE, *args, "--timeout", "0.3", "--no-progress"],
        capture_output=True,
        text=True,
        env=env(),
        timeout=GUARD,
    )
    assert done.returncode == 0, done.stderr
    header = done.stdout.splitlines()[0].split()
    assert header[-1] == "timeouts"
    assert done.stdout.splitlines()[1].split()[-1] == "2"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["graders"][0]["timeouts"] == 2


@pytest.mark.parametrize("bad", ["0", "-1", "nan", "inf"])
def test_eval_cli_refuses_a_timeout_that_is_no_duration(tmp_path: Path, bad: str):
    graders = str(grader_file(tmp_path, "numeric_answer"))
    done = subprocess.run(
        [*GRADEWIRE, "eval", str(data_file(tmp_path, 1)), "--graders", graders, "--timeout", bad],
        capture_output=True,
        text=True,
        env=env(),
        timeout=GUARD,
    )
    assert done.returncode == 2
    assert "--timeout must be a positive number of seconds" in done.stderr


def test_ctrl_c_stops_an_eval_whose_sync_grader_blocks_and_keeps_what_finished(tmp_path: Path):
    """A sync grader in time.sleep(1000): Ctrl-C is handled, the process exits at once.

    The first Ctrl-C stops starting samples (the ones in flight may finish); the second
    abandons them. Before sync graders ran in worker threads, the event loop itself was
    blocked in the sleep and Ctrl-C did nothing.
    """
    out = tmp_path / "run"
    graders = str(grader_file(tmp_path, "sleeps_from_the_fourth_row"))
    args = ["eval", str(data_file(tmp_path, 8)), "--graders", graders, "--out", str(out)]
    sleeping = tmp_path / "sleeping.txt"
    process = subprocess.Popen(
        [*GRADEWIRE, *args, "--concurrency", "2", "--no-progress"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**env(), "GRADEWIRE_TEST_CALLS": str(sleeping)},
    )
    try:
        deadline = time.monotonic() + GUARD
        while (
            not (out / "results.jsonl").exists()
            or len(results(out)) < 3
            or not sleeping.exists()
            or sleeping.read_text().count("sleeping") < 2
        ):
            assert time.monotonic() < deadline, "the first three rows were not graded"
            assert process.poll() is None, process.communicate()
            time.sleep(0.05)
        # The first three rows are written and the next two are blocked in the sleep.
        process.send_signal(signal.SIGINT)
        time.sleep(0.5)
        assert process.poll() is None  # waiting for the samples in flight ...
        process.send_signal(signal.SIGINT)  # ... until a second Ctrl-C abandons them
        _stdout, stderr = process.communicate(timeout=GUARD)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 130, stderr
    assert "press Ctrl-C again to abandon them" in stderr  # said with --no-progress too
    assert "interrupted: 3 sample(s) graded and kept" in stderr
    assert sorted(line["id"] for line in results(out)) == ["q0", "q1", "q2"]
    assert json.loads((out / "summary.json").read_text())["complete"] is False


async def test_sync_graders_run_concurrently_in_eval(tmp_path: Path):
    """20 samples of a sync grader at concurrency 20: all are inside it at once."""
    import threading

    barrier = threading.Barrier(20, timeout=GUARD)

    def meets(sample: StringThread) -> float:
        barrier.wait()
        return 1.0

    grader = BaseGrader.from_function("meets", meets)
    result = await run_eval(data_file(tmp_path, 20), [grader], tmp_path / "run", concurrency=20)
    assert result.summaries[0].n == 20
    assert result.summaries[0].errors == 0
