"""What CommandGrader tells the user about a run: why it could not start, how it ended."""

from __future__ import annotations

import errno
import signal
from collections.abc import Sequence

from gradewire.core._errors import GradingError
from gradewire.tools._process import ProcessResult

__all__ = ["exit_error", "outcome_reasoning", "spawn_error"]

_EXIT_MEANINGS = {
    126: (
        "the shell's 'found but cannot execute'",
        "make it executable (chmod +x) or run it with its interpreter",
    ),
    127: ("the shell's 'command not found'", "install the program, or fix PATH (env=) or cwd="),
}


def spawn_error(exc: OSError, argv: Sequence[str], cwd: str | None, *, shell: bool) -> GradingError:
    """Why the command could not start, and what to change."""
    if exc.errno == errno.E2BIG:
        return GradingError(
            "the environment is too large to start the command (E2BIG); pass "
            "completion_via='stdin' or 'file', inherit_env=False, or fewer env= variables"
        )
    filename = exc.filename
    if cwd is not None and filename == cwd:
        return GradingError(
            f"cannot run in cwd {cwd!r}: {exc.strerror}; pass an existing, "
            "accessible directory as cwd="
        )
    program = argv[0]
    if shell:
        what, fix = f"shell {program!r}", "install it, or pass shell= the path of another"
    else:
        what = f"program {program!r}"
        fix = "install it, give its absolute path, or set PATH through env="
    if isinstance(exc, FileNotFoundError):
        return GradingError(f"{what} not found; {fix}")
    return GradingError(f"cannot run {what}: {exc.strerror or exc}; {fix}")


def exit_error(shown: str, code: int, tail: str) -> GradingError:
    """The error for an exit code that says the command could not run at all."""
    meaning, fix = _EXIT_MEANINGS.get(
        code, ("could not run", "fix the command, its PATH (env=) or cwd=")
    )
    return GradingError(
        f"{shown} exited with {code} ({meaning}): {tail or '(no output)'}; "
        f"{fix}. If {code} is a real failure of your command, pass "
        "error_exit_codes=() to score it 0.0"
    )


def outcome_reasoning(result: ProcessResult, timeout: float | None) -> str:
    """How the run ended, in a few words."""
    if result.timed_out:
        return f"timed out after {timeout or 0:g} s; its processes were killed"
    if result.exit_code < 0:
        return f"killed by signal {_signal_name(-result.exit_code)}"
    return f"exit code {result.exit_code}"


def _signal_name(number: int) -> str:
    try:
        return f"{signal.Signals(number).name} ({number})"
    except ValueError:
        return str(number)
