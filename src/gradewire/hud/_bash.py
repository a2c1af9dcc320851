"""HUD's `BashGrader`: ``/bin/bash -lc command`` scored by exit code, on the native grader."""

from __future__ import annotations

import os
import sys
from typing import Any, ClassVar

from gradewire.core import GradingError, InvalidTypeError, StringThread
from gradewire.hud._grader import Grader, reject_unknown
from gradewire.hud._results import SubScore
from gradewire.tools._command_grader import CommandGrader

__all__ = ["BashGrader"]


class BashGrader(Grader):
    """Run a shell command with ``/bin/bash -lc`` and score 1.0 when it exits 0, else 0.0.

    ``info`` holds ``exit_code``, ``stdout`` and ``stderr`` (whole, as in HUD; a subclass
    can set `output_cap`), ``timed_out``, ``duration_s``, ``command`` and ``cwd``.
    On timeout the whole process group is ended and the score is 0.0 (``exit_code`` None,
    ``timeout`` the limit), as in HUD; the native `gradewire.CommandGrader` makes it a
    timeout outcome (`GradeTimeoutError`) unless given ``timeout_score``. When the command
    cannot run at all (no bash, a missing ``cwd``) the score is 0.0 with the reason in
    ``info["error"]`` (and ``stderr``), as in HUD; the native `gradewire.CommandGrader`
    raises `GradingError` instead.

    The command reads an empty stdin, and runs in a login shell: the profile files set
    its ``PATH``.

    Example:
        >>> result = await BashGrader.grade(weight=1.0, command="pytest -q")  # doctest: +SKIP
    """

    name = "BashGrader"
    default_timeout: ClassVar[float] = 600.0
    """Seconds a command may run when the call gives no ``timeout_seconds``."""
    shell: ClassVar[str] = "/bin/bash"
    """The shell that runs commands (a subclass may name another, e.g. on NixOS)."""
    output_cap: ClassVar[int | None] = None
    """Characters of stdout and of stderr kept in ``info`` (head and tail); None keeps all,
    as HUD does."""

    @classmethod
    async def compute_score(
        cls,
        command: str | None = None,
        cwd: str | os.PathLike[str] | None = None,
        timeout_seconds: float | None = None,
        **kwargs: Any,
    ) -> SubScore:
        """Run ``command`` and score its exit code.

        Args:
            command: The shell command, e.g. ``"pytest -q"``.
            cwd: The directory to run in (a workspace's root); None for the current one.
            timeout_seconds: Seconds before the command is killed and scores 0.0 (default:
                `default_timeout`, 600).
            **kwargs: Refused: HUD ignores unknown arguments, which hides a misspelled one.

        Raises:
            InvalidInputError: ``command`` is missing or empty, or the timeout is not a
                positive number.
        """
        reject_unknown(cls, kwargs, ("command", "cwd", "timeout_seconds"))
        if not isinstance(command, str):
            raise InvalidTypeError(
                f"{cls.__name__} requires command=, a shell string such as 'pytest -q' "
                f"(got {type(command).__name__})"
            )
        timeout = cls.default_timeout if timeout_seconds is None else timeout_seconds
        native = CommandGrader(
            cls.name,
            command,
            cwd=cwd,
            timeout=timeout,
            timeout_score=0.0,  # HUD scores a command that ran out of time 0.0
            shell=cls.shell,
            login_shell=True,
            completion_via="stdin",  # nothing to pass: the command reads end of file at once
            prompt_env_var=None,
            error_exit_codes=(),  # 126/127 are a failed command for HUD, scored 0.0
            output_cap=sys.maxsize if cls.output_cap is None else cls.output_cap,
        )
        base: dict[str, Any] = {"command": command, "cwd": native.cwd}
        try:
            grade = await native.grade(StringThread([]))
        except GradingError as exc:
            message = str(exc)
            info = {
                "exit_code": None,
                "stdout": "",
                "stderr": message,
                "timed_out": False,
                "error": message,
                **base,
            }
            return SubScore(name=cls.name, value=0.0, info=info)
        details = grade.info
        timed_out = bool(details["timed_out"])
        info = {
            "exit_code": None if timed_out else details["exit_code"],
            "stdout": details["stdout"],
            "stderr": details["stderr"],
            "timed_out": timed_out,
            "duration_s": details["duration_s"],
            **base,
        }
        if timed_out:
            info["timeout"] = native.timeout
        if details["notes"]:
            info["notes"] = list(details["notes"])
        return SubScore(name=cls.name, value=grade.value, info=info)
