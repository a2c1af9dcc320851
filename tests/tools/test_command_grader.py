import asyncio
import itertools
import logging
import os
import re
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gradewire import (
    CommandGrader,
    GradeTimeoutError,
    GradingError,
    InvalidInputError,
    InvalidTypeError,
    StringThread,
    Table,
)
from gradewire.tools import _process, _process_group
from gradewire.tools._capture import StreamCapture

HOSTILE = [
    "$(rm -rf ~)",
    "`touch pwned`",
    "; touch pwned",
    "a' b\" c\n$HOME ${PATH} \\ %s %n && touch pwned || touch pwned | touch pwned",
    "".join(map(chr, range(1, 256))) + "\u2028é𝄞\ufeff$(touch pwned)",
]
VIAS = ["env", "stdin", "file"]
# Each way the completion can arrive, written byte for byte to out.txt.
TO_OUT = {
    "env": 'printf %s "$GRADEWIRE_COMPLETION" > out.txt',
    "stdin": "cat > out.txt",
    "file": (
        'cat "$GRADEWIRE_COMPLETION_FILE" > out.txt; '
        'printf %s "$GRADEWIRE_COMPLETION_FILE" > path.txt'
    ),
}


def thread(completion: str | None = "answer", prompt: str = "question") -> StringThread:
    turns = [("user", prompt)]
    if completion is not None:
        turns.append(("assistant", completion))
    return StringThread(turns)


def gone(pid: int) -> bool:
    """The process no longer runs (a zombie left to an init that does not reap is gone too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    except OSError:
        return False
    return state in (b"Z", b"X")


async def wait_for_file(path: Path) -> int:
    """The pid a command wrote to ``path`` (polled: the command writes it at its own pace)."""
    for _ in range(1000):
        # Read once: the shell's `>` truncates before it writes, so a second read can meet
        # the file empty again.
        text = path.read_text().strip() if path.exists() else ""
        if text.isdigit():
            return int(text)
        await asyncio.sleep(0.01)
    raise AssertionError(f"{path} was never written")


@pytest.fixture(params=["supervised", "process group"])
def either_runner(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test under the subreaper supervisor, and again with the process group alone."""
    if request.param == "process group":
        monkeypatch.setattr(_process, "supervised", lambda: False)
    return str(request.param)


@pytest.fixture
def group_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run commands the way systems without child subreapers do: the process group alone."""
    monkeypatch.setattr(_process, "supervised", lambda: False)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A sacrificial $HOME, so a completion that did run `rm -rf ~` could only hit this."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "canary").write_text("alive")
    monkeypatch.setenv("HOME", str(home))
    return home


# Scores and exit codes.


@pytest.mark.parametrize(("code", "value"), [(0, 1.0), (1, 0.0), (7, 0.0)])
async def test_exit_code_decides_the_score(code: int, value: float):
    grade = await CommandGrader("bash", f"exit {code}").grade(thread())
    assert grade.value == value
    assert grade.grader_key == "bash"
    assert grade.info["exit_code"] == code
    assert grade.info["timed_out"] is False
    assert grade.reasoning is not None
    assert grade.reasoning.startswith(f"exit code {code}")


async def test_stdout_and_stderr_are_kept_apart_in_info():
    grade = await CommandGrader("bash", "echo out; echo err >&2; exit 1").grade(thread())
    assert grade.info["stdout"] == "out\n"
    assert grade.info["stderr"] == "err\n"
    assert grade.info["command"] == ["/bin/bash", "-c", "echo out; echo err >&2; exit 1"]
    assert grade.info["duration_s"] >= 0.0
    assert "err" in (grade.reasoning or "")


async def test_a_signal_death_is_a_zero_that_names_the_signal():
    grade = await CommandGrader("bash", "kill -KILL $$").grade(thread())
    assert grade.value == 0.0
    assert grade.info["exit_code"] == -9
    assert "SIGKILL" in (grade.reasoning or "")


async def test_login_shell_runs_bash_lc():
    grader = CommandGrader("bash", "shopt -q login_shell", login_shell=True)
    assert grader.argv[:2] == ("/bin/bash", "-lc")
    assert (await grader.grade(thread())).value == 1.0
    assert (await CommandGrader("bash", "shopt -q login_shell").grade(thread())).value == 0.0


async def test_argument_lists_run_without_a_shell(tmp_path: Path):
    grader = CommandGrader("bash", ["printf", "%s", "$(touch pwned); `touch pwned`"], cwd=tmp_path)
    grade = await grader.grade(thread())
    assert grade.value == 1.0
    assert grade.info["stdout"] == "$(touch pwned); `touch pwned`"
    assert grade.info["command"] == ["printf", "%s", "$(touch pwned); `touch pwned`"]
    assert not list(tmp_path.rglob("*pwned*"))


async def test_argument_lists_take_paths_and_get_the_completion():
    script = "import os, sys; sys.exit(0 if os.environ['GRADEWIRE_COMPLETION'] == 'x y' else 3)"
    grader = CommandGrader("py", [Path(sys.executable), "-c", script])
    assert (await grader.grade(thread("x y"))).value == 1.0
    assert (await grader.grade(thread("x"))).value == 0.0


async def test_a_list_command_is_copied():
    command = ["true"]
    grader = CommandGrader("bash", command)
    command[0] = "false"
    assert (await grader.grade(thread())).value == 1.0


# The completion is data, never code.


@pytest.mark.parametrize("via", VIAS)
async def test_the_completion_arrives_byte_for_byte(via: str, tmp_path: Path):
    completion = "line one\nline two ünïcødé 𝄞\n"
    grader = CommandGrader("bash", TO_OUT[via], cwd=tmp_path, completion_via=via)
    grade = await grader.grade(thread(completion))
    assert grade.value == 1.0
    assert (tmp_path / "out.txt").read_bytes() == completion.encode()
    assert grade.info["completion_via"] == via


@pytest.mark.parametrize("via", VIAS)
@pytest.mark.parametrize("completion", HOSTILE)
async def test_a_hostile_completion_is_inert(via: str, completion: str, tmp_path: Path, home: Path):
    work = tmp_path / "work"
    work.mkdir()
    grader = CommandGrader("bash", TO_OUT[via], cwd=work, completion_via=via)
    grade = await grader.grade(thread(completion))
    assert grade.value == 1.0
    assert (work / "out.txt").read_bytes() == completion.encode()
    assert not list(tmp_path.rglob("*pwned*"))
    assert (home / "canary").read_text() == "alive"
    assert completion not in " ".join(grade.info["command"])


async def test_the_completion_file_is_deleted_afterwards(tmp_path: Path):
    command = TO_OUT["file"] + '; test -z "${GRADEWIRE_COMPLETION+set}"'
    grader = CommandGrader("bash", command, cwd=tmp_path, completion_via="file")
    assert (await grader.grade(thread("in a file"))).value == 1.0
    path = Path((tmp_path / "path.txt").read_text())
    assert path.is_absolute()
    assert not path.exists()
    # A command that deletes the file itself is fine too.
    remover = CommandGrader("bash", 'rm "$GRADEWIRE_COMPLETION_FILE"', completion_via="file")
    assert (await remover.grade(thread())).value == 1.0


@pytest.mark.parametrize("via", ["stdin", "file"])
async def test_stdin_and_file_carry_what_no_variable_can(via: str, tmp_path: Path):
    completion = "nul\0inside" + "x" * 300_000
    grader = CommandGrader("bash", TO_OUT[via], cwd=tmp_path, completion_via=via)
    assert (await grader.grade(thread(completion))).value == 1.0
    assert (tmp_path / "out.txt").read_bytes() == completion.encode()


@pytest.mark.parametrize("completion", ["nul\0inside", "x" * 200_000])
async def test_a_completion_no_variable_can_hold_is_an_error(completion: str):
    grader = CommandGrader("bash", "true")
    with pytest.raises(GradingError, match="completion_via='stdin'"):
        await grader.grade(thread(completion))
    assert await grader.grade_many([thread(completion)]) == [None]
    assert grader.get_logs()["score/error_count"] == 1


async def test_a_command_that_ignores_stdin_is_not_an_error():
    grader = CommandGrader("bash", "exit 0", completion_via="stdin")
    assert (await grader.grade(thread("x" * 1_000_000))).value == 1.0


async def test_lone_surrogates_arrive_as_replacement_characters(tmp_path: Path):
    grader = CommandGrader("bash", TO_OUT["env"], cwd=tmp_path)
    assert (await grader.grade(thread("cut \ud83d emoji"))).value == 1.0
    assert (tmp_path / "out.txt").read_text(encoding="utf-8") == "cut \ufffd emoji"


async def test_a_missing_completion_is_the_empty_string():
    command = '[ -n "${GRADEWIRE_COMPLETION+set}" ] && [ -z "$GRADEWIRE_COMPLETION" ]'
    assert (await CommandGrader("bash", command).grade(thread(None))).value == 1.0


async def test_the_prompt_is_the_last_user_message():
    sample = StringThread([("user", "first"), ("assistant", "a"), ("user", "$(last) 'q'")])
    grader = CommandGrader("bash", 'printf %s "$GRADEWIRE_PROMPT"')
    assert (await grader.grade(sample)).info["stdout"] == "$(last) 'q'"
    quiet = CommandGrader("bash", 'test -z "${GRADEWIRE_PROMPT+set}"', prompt_env_var=None)
    assert (await quiet.grade(sample)).value == 1.0


async def test_a_prompt_no_variable_can_hold_is_left_unset_with_a_note(
    caplog: pytest.LogCaptureFixture,
):
    grader = CommandGrader("bash", 'test -z "${GRADEWIRE_PROMPT+set}"')
    with caplog.at_level(logging.WARNING, logger="gradewire"):
        first = await grader.grade(thread(prompt="p" * 200_000))
        second = await grader.grade(thread(prompt="nul\0prompt"))
    assert (first.value, second.value) == (1.0, 1.0)
    assert "128 KiB" in first.info["notes"][0]
    assert "NUL" in second.info["notes"][0]
    assert len([r for r in caplog.records if "GRADEWIRE_PROMPT" in r.getMessage()]) == 1


# Environment and working directory.


async def test_env_extends_the_inherited_environment(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("GW_TEST_PARENT", "parent")
    monkeypatch.setenv("GW_TEST_DROP", "should go")
    monkeypatch.setenv("GRADEWIRE_COMPLETION", "stale")
    command = (
        'printf "%s|%s|%s|%s" "$GW_TEST_PARENT" "$GW_TEST_EXTRA" "${GW_TEST_DROP-unset}" '
        '"${GRADEWIRE_COMPLETION-unset}"'
    )
    env = {"GW_TEST_EXTRA": "extra $(x)", "GW_TEST_DROP": None}
    grader = CommandGrader("bash", command, env=env, completion_via="stdin")
    grade = await grader.grade(thread())
    assert grade.info["stdout"] == "parent|extra $(x)|unset|unset"


async def test_inherit_env_false_starts_from_nothing(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("GW_TEST_PARENT", "parent")
    command = 'printf "%s|%s|%s" "${GW_TEST_PARENT-unset}" "$GW_TEST_EXTRA" "$GRADEWIRE_COMPLETION"'
    grader = CommandGrader("bash", command, env={"GW_TEST_EXTRA": "extra"}, inherit_env=False)
    assert (await grader.grade(thread("c"))).info["stdout"] == "unset|extra|c"


async def test_cwd_is_where_the_command_runs(tmp_path: Path):
    grade = await CommandGrader("bash", "pwd -P", cwd=tmp_path).grade(thread())
    assert grade.info["stdout"].strip() == str(tmp_path.resolve())
    assert grade.info["cwd"] == str(tmp_path)


@pytest.mark.parametrize("make", ["missing", "file"])
async def test_a_bad_cwd_is_an_error_counted_by_grade_many(make: str, tmp_path: Path):
    cwd = tmp_path / "nowhere"
    if make == "file":
        cwd.write_text("not a directory")
    grader = CommandGrader("bash", "true", cwd=cwd)
    with pytest.raises(GradingError, match="cwd"):
        await grader.grade(thread())
    assert await grader.grade_many([thread(), thread()]) == [None, None]
    logs = grader.get_logs()
    assert logs["score/error_count"] == 2
    assert "score/mean" not in logs


# Commands that cannot run are errors, not zeros.


async def test_a_missing_shell_is_an_error():
    with pytest.raises(GradingError, match="shell '/nonexistent/bash' not found"):
        await CommandGrader("bash", "true", shell="/nonexistent/bash").grade(thread())


async def test_a_missing_program_is_an_error():
    with pytest.raises(GradingError, match="program 'gradewire-no-such-program' not found"):
        await CommandGrader("bash", ["gradewire-no-such-program"]).grade(thread())


async def test_a_program_that_cannot_execute_is_an_error(tmp_path: Path):
    script = tmp_path / "script.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(stat.S_IRUSR | stat.S_IWUSR)
    with pytest.raises(GradingError, match="cannot run program"):
        await CommandGrader("bash", [str(script)]).grade(thread())
    with pytest.raises(GradingError, match="126"):
        await CommandGrader("bash", str(script)).grade(thread())


async def test_command_not_found_in_a_shell_is_an_error_unless_told_otherwise():
    grader = CommandGrader("bash", "gradewire-no-such-program --flag")
    with pytest.raises(GradingError, match="command not found") as caught:
        await grader.grade(thread())
    assert "gradewire-no-such-program" in str(caught.value)
    lenient = CommandGrader("bash", "gradewire-no-such-program", error_exit_codes=())
    grade = await lenient.grade(thread())
    assert (grade.value, grade.info["exit_code"]) == (0.0, 127)


# Output capture.


async def test_large_output_is_read_concurrently_and_capped():
    command = (
        "head -c 1000000 /dev/zero | tr '\\0' e >&2; "
        "printf START; head -c 1000000 /dev/zero | tr '\\0' a; printf END"
    )
    grade = await CommandGrader("bash", command, output_cap=1000).grade(thread())
    assert grade.value == 1.0
    for name, text, total in [
        ("stdout", "START" + "a" * 1_000_000 + "END", 1_000_008),
        ("stderr", "e" * 1_000_000, 1_000_000),
    ]:
        kept = grade.info[name]
        assert len(kept) <= 1000
        match = re.search(r"…\[(\d+) chars cut\]…", kept)
        assert match is not None, name
        head, tail = kept[: match.start()], kept[match.end() :]
        assert len(head) + len(tail) + int(match.group(1)) == total
        assert text.startswith(head)
        assert text.endswith(tail)
        assert len(head) > 400
        assert len(tail) > 400


async def test_undecodable_output_is_replaced_not_fatal():
    grade = await CommandGrader("bash", r"printf '\377\376ok'").grade(thread())
    assert grade.info["stdout"] == "\ufffd\ufffdok"


@given(
    text=st.text(max_size=300),
    cap=st.integers(min_value=64, max_value=200),
    cuts=st.lists(st.integers(min_value=0, max_value=1200), max_size=8),
)
def test_capture_keeps_head_and_tail_whatever_the_chunking(text: str, cap: int, cuts: list[int]):
    data = text.encode()
    capture = StreamCapture(cap)
    edges = sorted({0, len(data), *(c for c in cuts if c <= len(data))})
    for start, end in itertools.pairwise(edges):
        capture.feed(data[start:end])  # cuts may split a character's bytes
    kept = capture.text()
    if len(text) <= cap:
        assert kept == text
    else:
        assert len(kept) <= cap
        match = re.search(r"…\[(\d+) chars cut\]…", kept)
        assert match is not None
        head, tail = kept[: match.start()], kept[match.end() :]
        assert text.startswith(head)
        assert text.endswith(tail)
        assert len(head) + len(tail) + int(match.group(1)) == len(text)


def test_capture_marks_a_cut_off_character():
    capture = StreamCapture(64)
    capture.feed("é".encode()[:1])
    assert capture.text() == "\ufffd"


# Timeouts, leftovers and cancellation: the whole process group goes.


async def test_a_timeout_kills_the_group_with_its_grandchildren(tmp_path: Path, either_runner: str):
    command = "sh -c 'sleep 1000 & echo $! > child.pid; sleep 1000'"
    grader = CommandGrader("bash", command, cwd=tmp_path, timeout=0.5)
    with pytest.raises(GradeTimeoutError, match=r"within its timeout of 0\.5 s"):
        await grader.grade(thread())
    grandchild = int((tmp_path / "child.pid").read_text())
    assert gone(grandchild)  # ended before the grade returned


async def test_a_timeout_score_scores_a_command_that_ran_out_of_time(tmp_path: Path):
    command = "sh -c 'sleep 1000 & echo $! > child.pid; sleep 1000'"
    grader = CommandGrader("bash", command, cwd=tmp_path, timeout=0.5, timeout_score=0.0)
    grade = await grader.grade(thread())
    assert gone(int((tmp_path / "child.pid").read_text()))
    assert grade.value == 0.0
    assert grade.info["timed_out"] is True
    assert "timed out after 0.5 s" in (grade.reasoning or "")
    assert "timeout_score" in (grade.reasoning or "")


async def test_timeout_bounds_the_whole_grade_and_is_a_timeout_outcome():
    # The case: a command out of time was a real 0.0 in the mean, error_count 0.
    grader = CommandGrader("c", ["sleep", "5"], timeout=1)
    assert grader.timeout == 1.0
    assert grader.timeout_score is None
    grades = await grader.grade_many([thread(), thread()])
    assert grades == [None, None]
    logs = grader.get_logs()
    assert logs["score/timeout_count"] == 2
    assert logs["score/error_count"] == 2
    assert "score/mean" not in logs
    # One attribute, one meaning: setting it moves the command's bound too.
    grader.timeout = 30
    grade = await CommandGrader("c", ["true"], timeout=None).grade(thread())
    assert grade.value == 1.0
    assert grader.timeout == 30.0


async def test_a_group_that_ignores_sigterm_gets_sigkill(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, either_runner: str
):
    monkeypatch.setattr(_process, "KILL_GRACE_S", 0.2)  # the grace is long for a test
    command = "trap '' TERM; sleep 1000 & echo $! > child.pid; wait"
    grader = CommandGrader("bash", command, cwd=tmp_path, timeout=0.5, timeout_score=0.0)
    grade = await grader.grade(thread())
    assert grade.info["timed_out"] is True
    assert gone(int((tmp_path / "child.pid").read_text()))


async def test_processes_left_running_after_exit_are_ended(tmp_path: Path, either_runner: str):
    command = "sleep 1000 & echo $! > child.pid; echo done"
    grade = await CommandGrader("bash", command, cwd=tmp_path).grade(thread())
    assert grade.value == 1.0
    assert grade.info["stdout"] == "done\n"
    assert grade.info["killed_leftovers"] is True
    assert gone(int((tmp_path / "child.pid").read_text()))


async def test_without_a_subreaper_a_process_that_left_the_group_cannot_hang_the_grade(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, group_only: None
):
    monkeypatch.setattr(_process, "_DRAIN_S", 0.2)
    # The pid is written once the new session exists, so the grade starts after the escape.
    command = (
        "setsid sh -c 'echo $$ > child.pid; exec sleep 1000' & "
        "while [ ! -s child.pid ]; do sleep 0.01; done; echo done"
    )
    grader = CommandGrader("bash", command, cwd=tmp_path)
    escaped = None
    try:
        grade = await grader.grade(thread())
        escaped = int((tmp_path / "child.pid").read_text())
        assert grade.value == 1.0
        assert grade.info["stdout"] == "done\n"
        assert any("incomplete" in note for note in grade.info["notes"])
    finally:
        if escaped is not None and not gone(escaped):
            os.kill(escaped, 9)


async def test_the_proc_scan_runs_off_the_event_loop_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, group_only: None
):
    loop_thread = threading.current_thread()
    scan_threads: list[threading.Thread] = []
    scan = _process_group._member_running

    def recording_scan(pgid: int) -> bool:
        scan_threads.append(threading.current_thread())
        return scan(pgid)

    monkeypatch.setattr(_process_group, "_member_running", recording_scan)
    # The leftover keeps the group signalable after the command exits: only a scan can
    # tell whether it still runs.
    command = "sleep 1000 & echo $! > child.pid; echo done"
    grade = await CommandGrader("bash", command, cwd=tmp_path).grade(thread())
    assert grade.info["killed_leftovers"] is True
    assert gone(int((tmp_path / "child.pid").read_text()))
    assert scan_threads
    assert loop_thread not in scan_threads


async def test_zombies_do_not_keep_a_group_alive_and_a_gone_group_needs_no_scan(
    monkeypatch: pytest.MonkeyPatch,
):
    # Its parent (this process) is outside its group and does not reap it yet, so
    # killpg still reaches the group: only /proc tells that nothing of it runs.
    zombie = subprocess.Popen(["true"], start_new_session=True)
    try:
        for _ in range(500):
            if gone(zombie.pid):
                break
            await asyncio.sleep(0.01)
        os.killpg(zombie.pid, 0)  # a zombie is still signalable
        assert await _process_group.group_alive(zombie.pid) is False
    finally:
        zombie.wait()
    scans: list[int] = []
    monkeypatch.setattr(_process_group, "_member_running", lambda pgid: scans.append(pgid) or True)
    assert await _process_group.group_alive(zombie.pid) is False
    assert scans == []


async def test_cancelling_the_grade_kills_the_group(tmp_path: Path, either_runner: str):
    command = "sh -c 'echo $$ > leader.pid; sleep 1000 & echo $! > child.pid; wait'"
    grader = CommandGrader("bash", command, cwd=tmp_path)
    task = asyncio.ensure_future(grader.grade(thread()))
    child = await wait_for_file(tmp_path / "child.pid")
    leader = await wait_for_file(tmp_path / "leader.pid")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert gone(leader)
    assert gone(child)
    assert grader.get_logs() == {}


# Logs.


async def test_logs_report_the_timeout_rate_and_sample_tables():
    command = (
        'if [ "$GRADEWIRE_COMPLETION" = slow ]; then sleep 1000; fi; '
        '[ "$GRADEWIRE_COMPLETION" = good ]'
    )
    grader = CommandGrader("bash", command, timeout=1.0, sample_tables=True)
    samples = [thread("good"), thread("bad"), thread("slow"), thread("good")]
    grades = await grader.grade_many(samples)
    assert [g.value if g else None for g in grades] == [1.0, 0.0, None, 1.0]
    logs = grader.get_logs()
    assert logs["score/timeout_count"] == 1
    assert logs["score/error_count"] == 1
    assert logs["score/mean"] == pytest.approx(2 / 3)
    assert logs["score/count"] == 3
    assert logs["exit_code/count"] == 3
    assert logs["duration_s/count"] == 3
    table = logs["score/scored_samples"]
    assert isinstance(table, Table)
    rows = {record["Completion"]: record for record in table.to_records()}  # finishing order
    assert sorted(table.column("Completion")) == ["bad", "good", "good"]
    assert rows["bad"]["Reasoning"] == "exit code 1"


async def test_concurrent_grades_keep_their_own_completion_and_output():
    grader = CommandGrader("bash", 'printf %s "$GRADEWIRE_COMPLETION"')
    samples = [thread(f"sample {i} $(x)") for i in range(12)]
    grades = await grader.grade_many(samples, max_concurrency=6)
    assert [g.info["stdout"] for g in grades if g] == [f"sample {i} $(x)" for i in range(12)]
    assert "prompt" not in grader._logs[0]


# Construction checks.


@pytest.mark.parametrize(
    ("command", "options", "error", "match"),
    [
        ("", {}, InvalidInputError, "command is empty"),
        ("   ", {}, InvalidInputError, "command is empty"),
        ([], {}, InvalidInputError, "command is empty"),
        ([""], {}, InvalidInputError, "command is empty"),
        (b"true", {}, InvalidTypeError, "shell string or a list"),
        (["true", 1], {}, InvalidTypeError, r"command\[1\]"),
        ("a\0b", {}, InvalidInputError, "NUL"),
        (["true"], {"login_shell": True}, InvalidInputError, "login_shell"),
        ("true", {"timeout": 0}, InvalidInputError, "positive"),
        ("true", {"timeout": -1.0}, InvalidInputError, "positive"),
        ("true", {"timeout": float("nan")}, InvalidInputError, "positive"),
        ("true", {"timeout": float("inf")}, InvalidInputError, "positive"),
        ("true", {"timeout": "10"}, InvalidTypeError, "seconds"),
        ("true", {"timeout": True}, InvalidTypeError, "seconds"),
        ("true", {"completion_via": "argv"}, InvalidInputError, "completion_via"),
        ("true", {"completion_env_var": "1BAD"}, InvalidInputError, "completion_env_var"),
        ("true", {"completion_env_var": "A-B"}, InvalidInputError, "completion_env_var"),
        ("true", {"prompt_env_var": ""}, InvalidInputError, "prompt_env_var"),
        ("true", {"prompt_env_var": "GRADEWIRE_COMPLETION"}, InvalidInputError, "different"),
        ("true", {"shell": "bash"}, InvalidInputError, "absolute path"),
        ("true", {"shell": 3}, InvalidTypeError, "shell"),
        ("true", {"login_shell": "yes"}, InvalidTypeError, "login_shell"),
        ("true", {"inherit_env": None}, InvalidTypeError, "inherit_env"),
        ("true", {"cwd": ""}, InvalidInputError, "cwd is empty"),
        ("true", {"cwd": 5}, InvalidTypeError, "cwd"),
        ("true", {"output_cap": 10}, InvalidInputError, "output_cap"),
        ("true", {"output_cap": 1000.0}, InvalidInputError, "output_cap"),
        ("true", {"env": ["A=1"]}, InvalidTypeError, "env"),
        ("true", {"env": {"A=B": "1"}}, InvalidInputError, "variable name"),
        ("true", {"env": {"": "1"}}, InvalidInputError, "variable name"),
        ("true", {"env": {"A": 1}}, InvalidTypeError, "str"),
        ("true", {"env": {"A": "x\0y"}}, InvalidInputError, "NUL"),
        ("true", {"env": {"GRADEWIRE_COMPLETION": "x"}}, InvalidInputError, "sets"),
        ("true", {"env": {"GRADEWIRE_PROMPT": "x"}}, InvalidInputError, "sets"),
        ("true", {"error_exit_codes": 127}, InvalidTypeError, "error_exit_codes"),
        ("true", {"error_exit_codes": [0]}, InvalidInputError, "1 to 255"),
        ("true", {"error_exit_codes": [256]}, InvalidInputError, "1 to 255"),
    ],
)
def test_bad_arguments_fail_at_construction(command, options, error, match):
    with pytest.raises(error, match=match):
        CommandGrader("bash", command, **options)


def test_bad_grader_key_fails_at_construction():
    with pytest.raises(InvalidInputError, match="grader_key"):
        CommandGrader("", "true")


def test_configuration_is_kept_for_inspection(tmp_path: Path):
    grader = CommandGrader(
        "tests", "pytest -q", cwd=tmp_path, timeout=30, completion_via="file", env={"A": "1"}
    )
    assert grader.argv == ("/bin/bash", "-c", "pytest -q")
    assert grader.cwd == str(tmp_path)
    assert grader.timeout == 30.0
    assert type(grader.timeout) is float
    assert grader.completion_file_var == "GRADEWIRE_COMPLETION_FILE"
    assert grader.env == {"A": "1"}
    assert repr(grader) == "CommandGrader(grader_key='tests', command='pytest -q')"


async def test_cancelling_again_during_the_grace_period_kills_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, either_runner: str
):
    # The group ignores SIGTERM, so the first cancel leaves it in a grace period that
    # outlasts the test: only the second cancel's SIGKILL can end it.
    monkeypatch.setattr(_process, "KILL_GRACE_S", 1000.0)
    command = "trap '' TERM; echo $$ > leader.pid; sleep 1000 & echo $! > child.pid; wait"
    grader = CommandGrader("bash", command, cwd=tmp_path)
    task = asyncio.ensure_future(grader.grade(thread()))
    child = await wait_for_file(tmp_path / "child.pid")
    leader = await wait_for_file(tmp_path / "leader.pid")
    task.cancel()
    for _ in range(3):
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for pid in (leader, child):
        for _ in range(500):  # SIGKILL is sent; the kernel ends the process at its pace
            if gone(pid):
                break
            await asyncio.sleep(0.01)
        assert gone(pid)
