"""No process a grade starts outlives it: one test per way out of the process group.

Each command starts a process that leaves the group (or the session) as a hostile or
careless command would, records that process's /proc stat while it runs, and exits or
times out. After the grade, /proc must no longer list the process.
"""

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from gradewire import CommandGrader, StringThread
from gradewire.tools import _process

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="child subreapers are a Linux feature"
)

# The command waits until the escaped process has written its pid, then records where it is.
WAIT_AND_RECORD = (
    "while [ ! -s escaped.pid ]; do sleep 0.01; done; "
    'cat "/proc/$(cat escaped.pid)/stat" > escaped.stat; cat /proc/$$/stat > leader.stat'
)


def thread() -> StringThread:
    return StringThread([("user", "question"), ("assistant", "answer")])


def stat_fields(text: str) -> list[str]:
    """The fields after ``(comm)`` of a /proc/PID/stat line: state, ppid, pgrp, session..."""
    return text.rsplit(")", 1)[1].split()


def assert_escaped_and_ended(folder: Path, *, new_session: bool) -> None:
    pid = int((folder / "escaped.pid").read_text())
    _, _, pgrp, session, *_ = stat_fields((folder / "escaped.stat").read_text())
    _, _, command_pgrp, command_session, *_ = stat_fields((folder / "leader.stat").read_text())
    # The route was taken: the process had left the command's process group...
    assert pgrp != command_pgrp
    # ...and, for setsid, its session too.
    assert (session != command_session) is new_session
    # Nothing of it is left, not even a zombie.
    assert not Path(f"/proc/{pid}").exists()


async def test_setsid_f_is_ended_when_the_command_exits(tmp_path: Path):
    command = f"setsid -f sh -c 'echo $$ > escaped.pid; exec sleep 1000'; {WAIT_AND_RECORD}"
    grade = await CommandGrader("bash", command, cwd=tmp_path).grade(thread())
    assert grade.value == 1.0
    assert grade.info["killed_leftovers"] is True
    assert_escaped_and_ended(tmp_path, new_session=True)


async def test_a_job_control_background_job_is_ended(tmp_path: Path):
    # set -m gives each background job a process group of its own.
    command = f"set -m; sleep 1000 & echo $! > escaped.pid; {WAIT_AND_RECORD}"
    grade = await CommandGrader("bash", command, cwd=tmp_path).grade(thread())
    assert grade.value == 1.0
    assert grade.info["killed_leftovers"] is True
    assert_escaped_and_ended(tmp_path, new_session=False)


async def test_a_process_that_calls_setpgid_is_ended(tmp_path: Path):
    script = textwrap.dedent(
        """
        import os, time
        if os.fork() == 0:
            os.setpgid(0, 0)
            with open("escaped.pid", "w") as file:
                file.write(str(os.getpid()))
            time.sleep(1000)
        """
    )
    (tmp_path / "escape.py").write_text(script)
    command = f"{sys.executable} escape.py; {WAIT_AND_RECORD}"
    grade = await CommandGrader("bash", command, cwd=tmp_path).grade(thread())
    assert grade.value == 1.0
    assert grade.info["killed_leftovers"] is True
    assert_escaped_and_ended(tmp_path, new_session=False)


async def test_a_daemon_started_before_a_timeout_is_ended(tmp_path: Path):
    command = (
        f"setsid -f sh -c 'echo $$ > escaped.pid; exec sleep 1000'; {WAIT_AND_RECORD}; sleep 1000"
    )
    grade = await CommandGrader(
        "bash", command, cwd=tmp_path, timeout=1.0, timeout_score=0.0
    ).grade(thread())
    assert grade.value == 0.0
    assert grade.info["timed_out"] is True
    assert_escaped_and_ended(tmp_path, new_session=True)


async def test_a_daemon_that_closed_its_output_is_ended_and_noted(tmp_path: Path):
    # Holding no pipe of the grade, it once left no trace at all.
    command = (
        "setsid -f sh -c 'exec </dev/null >/dev/null 2>&1; echo $$ > escaped.pid; "
        f"exec sleep 1000'; {WAIT_AND_RECORD}"
    )
    grade = await CommandGrader("bash", command, cwd=tmp_path).grade(thread())
    assert grade.info["notes"] == ["processes left running by the command were ended"]
    assert grade.info["stdout"] == ""
    assert_escaped_and_ended(tmp_path, new_session=True)


async def test_cancelling_the_grade_ends_an_escaped_process(tmp_path: Path):
    command = (
        f"setsid -f sh -c 'echo $$ > escaped.pid; exec sleep 1000'; {WAIT_AND_RECORD}; sleep 1000"
    )
    task = asyncio.ensure_future(CommandGrader("bash", command, cwd=tmp_path).grade(thread()))
    for _ in range(1000):
        if (tmp_path / "leader.stat").exists() and (tmp_path / "leader.stat").read_text():
            break
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert_escaped_and_ended(tmp_path, new_session=True)


def test_an_escaped_process_does_not_outlive_the_grading_process(tmp_path: Path):
    # The grading process is killed outright (no cleanup of its own can run): the
    # supervisor gets its death signal and ends what the command started.
    script = textwrap.dedent(
        f"""
        import asyncio
        from gradewire import CommandGrader, StringThread
        command = "setsid -f sh -c 'echo $$ > escaped.pid; exec sleep 1000'; sleep 1000"
        grader = CommandGrader("bash", command, cwd={str(tmp_path)!r})
        asyncio.run(grader.grade(StringThread([("user", "q"), ("assistant", "a")])))
        """
    )
    grading = subprocess.Popen([sys.executable, "-c", script])
    pid_file = tmp_path / "escaped.pid"
    try:
        for _ in range(3000):
            if pid_file.exists() and pid_file.read_text().strip():
                break
            assert grading.poll() is None
            time.sleep(0.01)
        pid = int(pid_file.read_text())
        assert Path(f"/proc/{pid}").exists()
    finally:
        grading.send_signal(signal.SIGKILL)
        grading.wait()
    for _ in range(1000):
        if not _running(pid):
            break
        time.sleep(0.01)
    assert not _running(pid)


def _running(pid: int) -> bool:
    """Whether /proc lists ``pid`` as a live process (a zombie left to init is not)."""
    try:
        state = stat_fields(Path(f"/proc/{pid}/stat").read_text())[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


async def test_the_supervisor_runs_where_subreapers_exist():
    result = await _process.run_process(
        ["true"], cwd=None, env=dict(os.environb), stdin_data=None, timeout=10, output_cap=100
    )
    assert result.contained is True
    assert result.exit_code == 0
