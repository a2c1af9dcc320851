"""The shared supervisor's life: started once, survives what it must, takes everything along.

Commands run under workers of one supervisor process per grading process. These tests
kill, stop and outlive those processes and check that no process a grade started is left
running, that grades in flight fail clearly when their supervisor dies, and that the next
grade gets a new supervisor.
"""

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from gradewire import CommandGrader, GradingError, StringThread, run_sync
from gradewire.tools import _process, _supervisor

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="child subreapers are a Linux feature"
)

# Started in a session of its own, so only a subreaper can still reach it.
ESCAPE = "setsid -f sh -c 'echo $$ > escaped.pid; exec sleep 1000'"
# The worker running the command is its parent: $PPID of the command's shell.
RECORD_WORKER = "echo $PPID > worker.pid"


def thread(completion: str = "answer") -> StringThread:
    return StringThread([("user", "question"), ("assistant", completion)])


def running(pid: int) -> bool:
    """Whether /proc lists ``pid`` as a live process (a zombie left to init is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


async def pid_in(path: Path) -> int:
    for _ in range(3000):
        # Read once: the shell's `>` truncates before it writes, so a second read can meet
        # the file empty again.
        text = path.read_text().strip() if path.exists() else ""
        if text.isdigit():
            return int(text)
        await asyncio.sleep(0.01)
    raise AssertionError(f"{path} was never written")


async def ended(*pids: int) -> bool:
    """Whether every pid stops running within a few seconds (the kernel takes its time)."""
    for _ in range(500):
        if not any(running(pid) for pid in pids):
            return True
        await asyncio.sleep(0.01)
    return False


def current_supervisor() -> int:
    supervisor = _supervisor._current
    assert supervisor is not None
    assert supervisor.pid is not None
    return supervisor.pid


async def test_one_supervisor_serves_many_grades_event_loops_and_threads(tmp_path: Path):
    supervisor = _supervisor._current
    if supervisor is not None:
        supervisor.stop(10.0)  # so that the first grade below starts one
    grader = CommandGrader("bash", f"{RECORD_WORKER}; echo ok", cwd=tmp_path)
    # From inside a running loop, run_sync grades on a fresh loop in a thread that ends
    # afterwards: the supervisor that grade starts must not die with that thread.
    assert run_sync(grader.grade(thread())).value == 1.0
    first = current_supervisor()
    assert parent_of(int((tmp_path / "worker.pid").read_text())) == first
    grades = await grader.grade_many([thread()] * 8, max_concurrency=4)
    assert [g.value if g else None for g in grades] == [1.0] * 8
    other: list[float] = []
    runner = threading.Thread(
        target=lambda: other.append(asyncio.run(grader.grade(thread())).value)
    )
    runner.start()
    runner.join()
    assert other == [1.0]
    assert current_supervisor() == first
    assert running(first)
    # The last command ran in a worker of that same supervisor.
    assert parent_of(int((tmp_path / "worker.pid").read_text())) == first


async def test_a_killed_supervisor_fails_the_grades_in_flight_and_the_next_starts_anew(
    tmp_path: Path,
):
    await CommandGrader("warm", "true").grade(thread())  # the supervisor is running
    first = current_supervisor()
    command = f'{ESCAPE}; echo $$ > "$GRADEWIRE_COMPLETION.pid"; sleep 1000'
    grader = CommandGrader("bash", command, cwd=tmp_path)
    tasks = [asyncio.ensure_future(grader.grade(thread(name))) for name in ("a", "b", "c")]
    shells = [await pid_in(tmp_path / f"{name}.pid") for name in ("a", "b", "c")]
    escaped = await pid_in(tmp_path / "escaped.pid")
    os.kill(first, signal.SIGKILL)
    for task in tasks:
        with pytest.raises(
            GradingError, match="supervisor process that runs grader commands is gone"
        ):
            await task
    # Failed only once their workers had ended everything the commands started.
    assert not any(running(pid) for pid in [*shells, escaped])
    assert not running(first)
    grade = await CommandGrader("bash", "echo again").grade(thread())
    assert grade.value == 1.0
    assert grade.info["stdout"] == "again\n"
    assert current_supervisor() != first


async def test_a_command_that_kills_its_worker_leaves_nothing_behind(tmp_path: Path):
    # The escaped process was below the worker; once the worker is dead it is handed to
    # the supervisor, which kills it before the grade hears of the loss.
    command = (
        f"{ESCAPE}; while [ ! -s escaped.pid ]; do sleep 0.01; done; kill -9 $PPID; sleep 1000"
    )
    grade = await CommandGrader("bash", command, cwd=tmp_path).grade(thread())
    escaped = int((tmp_path / "escaped.pid").read_text())
    assert grade.value == 0.0
    assert grade.info["exit_code"] == -signal.SIGKILL
    assert not running(escaped)
    assert (await CommandGrader("bash", "true").grade(thread())).value == 1.0


async def test_a_command_that_stops_its_worker_is_still_ended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(_process, "KILL_GRACE_S", 0.2)
    monkeypatch.setattr(_process, "_REPORT_MARGIN_S", 0.3)
    command = (
        f"{ESCAPE}; while [ ! -s escaped.pid ]; do sleep 0.01; done; {RECORD_WORKER}; "
        "kill -STOP $PPID; sleep 1000"
    )
    grade = await CommandGrader(
        "bash", command, cwd=tmp_path, timeout=0.5, timeout_score=0.0
    ).grade(thread())
    assert grade.value == 0.0
    assert grade.info["timed_out"] is True
    escaped = int((tmp_path / "escaped.pid").read_text())
    worker = int((tmp_path / "worker.pid").read_text())
    assert await ended(escaped, worker)


def grading_script(folder: Path, body: str) -> list[str]:
    """A grading process that runs ``body`` (with CommandGrader and thread() in scope)."""
    head = textwrap.dedent(
        f"""
        import asyncio, threading
        from gradewire import CommandGrader, StringThread, run_sync
        def thread():
            return StringThread([("user", "q"), ("assistant", "a")])
        folder = {str(folder)!r}
        """
    )
    return [sys.executable, "-c", head + textwrap.dedent(body)]


async def test_a_killed_grading_process_leaves_no_supervisor_worker_or_command(tmp_path: Path):
    body = f"""
        command = "{ESCAPE}; {RECORD_WORKER}; echo $$ > shell.pid; sleep 1000"
        asyncio.run(CommandGrader("bash", command, cwd=folder).grade(thread()))
    """
    grading = subprocess.Popen(grading_script(tmp_path, body))
    try:
        worker = await pid_in(tmp_path / "worker.pid")
        shell = await pid_in(tmp_path / "shell.pid")
        escaped = await pid_in(tmp_path / "escaped.pid")
        supervisor = parent_of(worker)
        assert parent_of(supervisor) == grading.pid
    finally:
        grading.kill()
        grading.wait()
    assert await ended(supervisor, worker, shell, escaped)


async def test_a_grading_process_that_exits_mid_grade_leaves_nothing_behind(tmp_path: Path):
    # The grade runs in a daemon thread; the main thread exits while it is in flight.
    body = f"""
        command = "{ESCAPE}; {RECORD_WORKER}; echo $$ > shell.pid; sleep 1000"
        grader = CommandGrader("bash", command, cwd=folder)
        threading.Thread(target=lambda: run_sync(grader.grade(thread())), daemon=True).start()
        import os, time
        while not os.path.exists(os.path.join(folder, "escaped.pid")):
            time.sleep(0.01)
        time.sleep(0.2)
    """
    exited = subprocess.run(grading_script(tmp_path, body), timeout=60, check=False)
    assert exited.returncode == 0
    pids = [int((tmp_path / name).read_text()) for name in ("worker.pid", "shell.pid")]
    pids.append(int((tmp_path / "escaped.pid").read_text()))
    # Ended before the process exited: the exit waits for the supervisor to stop.
    assert not any(running(pid) for pid in pids)


def test_a_forked_child_gets_a_supervisor_of_its_own(tmp_path: Path):
    grader = CommandGrader("bash", f"{RECORD_WORKER}; echo ok", cwd=tmp_path)
    assert run_sync(grader.grade(thread())).value == 1.0
    parent_supervisor = current_supervisor()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        code = 1
        try:
            grade = run_sync(grader.grade(thread()))
            worker = int((tmp_path / "worker.pid").read_text())
            if grade.value == 1.0 and parent_of(parent_of(worker)) == os.getpid():
                code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert run_sync(grader.grade(thread())).value == 1.0
    assert current_supervisor() == parent_supervisor


async def test_the_supervisor_and_its_workers_keep_no_directory_busy(tmp_path: Path):
    # A command's directory may be on a volume the user unmounts after grading.
    grader = CommandGrader("bash", RECORD_WORKER, cwd=tmp_path)
    assert (await grader.grade(thread())).value == 1.0
    worker = int((tmp_path / "worker.pid").read_text())
    for pid in (worker, current_supervisor()):
        assert os.readlink(f"/proc/{pid}/cwd") == "/"
