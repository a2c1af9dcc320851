"""CommandGrader: score the state of the world by running a command (1.0 when it exits 0)."""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from gradewire.core._errors import (
    GradeTimeoutError,
    GradewireError,
    GradingError,
    InvalidInputError,
    InvalidTypeError,
)
from gradewire.core._grade import Grade
from gradewire.core._grader import BaseGrader
from gradewire.core._settings import check_finite
from gradewire.core._thread import StringThread
from gradewire.tools._command_checks import (
    check_bool,
    check_cwd,
    check_env,
    check_exit_codes,
    check_name,
    check_shell,
    command_argv,
    env_problem,
    utf8_bytes,
)
from gradewire.tools._command_messages import exit_error, outcome_reasoning, spawn_error
from gradewire.tools._process import ProcessResult, run_process

__all__ = ["CommandGrader", "CompletionVia"]

logger = logging.getLogger("gradewire")

CompletionVia = Literal["env", "stdin", "file"]
_VIAS = ("env", "stdin", "file")
_REASON_TAIL = 400


class CommandGrader(BaseGrader):
    """Run a command and score 1.0 when it exits 0, else 0.0.

    HUD's ``BashGrader`` as a native grader: an instance that grades `StringThread`s
    (HUD's class-method form is `gradewire.hud.BashGrader`).

    The completion reaches the command as data, never as code: in an environment
    variable (``$GRADEWIRE_COMPLETION``, the default), on stdin, or in a temporary file
    whose path is in ``$GRADEWIRE_COMPLETION_FILE`` (deleted afterwards). The last user
    message is in ``$GRADEWIRE_PROMPT``. No process the command starts outlives the
    grade: when it exits, times out or is cancelled, everything it started gets SIGTERM,
    then SIGKILL. On Linux this holds for processes that leave its process group or
    session (``setsid``, ``set -m`` jobs, ``setpgid``): the command runs under a child
    subreaper, a worker of one supervisor process that the grading process starts on
    first use and shares between graders. Elsewhere its process group is ended.

    A non-zero exit is a legitimate 0.0. A command still running at ``timeout`` (the
    bound of the whole grade, as on every grader) is ended and the grade is a timeout
    outcome: `GradeTimeoutError`, counted in ``score/timeout_count`` (and
    ``score/error_count``), never a 0.0 in the mean; pass ``timeout_score=0.0`` to score
    it instead, as HUD's `gradewire.hud.BashGrader` does. What makes the command unable to
    run at all (a missing shell, program or cwd; exit code 127, "command not found")
    raises `GradingError`, which `grade_many` counts in ``score/error_count``.

    Example:
        >>> grader = CommandGrader("tests", "pytest -q", cwd="/workspace")  # doctest: +SKIP
        >>> grader = CommandGrader(
        ...     "says-hello", 'grep -qi hello <<< "$GRADEWIRE_COMPLETION"'
        ... )  # doctest: +SKIP
    """

    def __init__(
        self,
        grader_key: str,
        command: str | Sequence[str | os.PathLike[str]],
        *,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str | None] | None = None,
        inherit_env: bool = True,
        timeout: float | None = 600.0,
        timeout_score: float | None = None,
        completion_via: CompletionVia = "env",
        completion_env_var: str = "GRADEWIRE_COMPLETION",
        prompt_env_var: str | None = "GRADEWIRE_PROMPT",
        output_cap: int = 64_000,
        shell: str | os.PathLike[str] = "/bin/bash",
        login_shell: bool = False,
        error_exit_codes: Iterable[int] = (126, 127),
        sample_tables: bool = False,
    ) -> None:
        """Configure the command.

        Args:
            grader_key: The grader's logical name.
            command: A shell string, run as ``[shell, "-c", command]``, or an argument
                list, run directly without a shell.
            cwd: Directory to run in (HUD: the workspace root the agent edited).
            env: Variables to add to the inherited environment; None as a value unsets one.
            inherit_env: Start from this process's environment; False starts empty.
            timeout: Seconds the grade may take (`BaseGrader.timeout`): past it the
                command's processes are ended and the grade is a `GradeTimeoutError`.
                None: no bound of its own (a default passed where the grader is used,
                such as ``grade_many(timeout=...)``, applies).
            timeout_score: The score of a command that ran out of time, if it should have
                one (e.g. 0.0, HUD's rule); None (the default) makes it a timeout outcome.
            completion_via: ``"env"``, ``"stdin"`` or ``"file"``: how the completion
                (the last assistant message, "" when there is none) reaches the command.
            completion_env_var: The variable holding the completion (``"env"``); with
                ``"file"`` the path is in this name plus ``_FILE``.
            prompt_env_var: The variable holding the last user message; None for none.
                A prompt no variable can hold (over 128 KiB, or with a NUL) is left
                unset, with a note in the grade's info.
            output_cap: Characters of stdout and of stderr kept each (head and tail).
            shell: Absolute path of the shell for string commands.
            login_shell: Run ``shell -lc`` (a login shell, as HUD does) instead of ``-c``.
            error_exit_codes: Exit codes that mean the command could not run (126: not
                executable, 127: not found) and raise `GradingError`; ``()`` scores them 0.0.
            sample_tables: Log prompt, completion and reasoning for the sample tables.
        """
        if os.name != "posix":
            raise GradewireError(
                "CommandGrader needs a POSIX system (Linux, macOS, WSL): it runs commands in "
                "process groups, which native Windows does not have; run it under WSL"
            )
        super().__init__(grader_key, sample_tables=sample_tables, timeout=timeout)
        self.timeout_score = (
            None if timeout_score is None else check_finite("timeout_score", timeout_score)
        )
        check_bool(login_shell, "login_shell")
        check_bool(inherit_env, "inherit_env")
        self.shell = check_shell(shell)
        self.login_shell = login_shell
        self.argv: tuple[str, ...] = command_argv(command, self.shell, login_shell)
        # A list is copied (as the argument tuple), so later changes to it cannot leak in.
        self.command: str | tuple[str, ...] = command if isinstance(command, str) else self.argv
        self.cwd = check_cwd(cwd)
        if completion_via not in _VIAS:
            raise InvalidInputError(
                f"completion_via must be 'env', 'stdin' or 'file', not {completion_via!r}"
            )
        self.completion_via: CompletionVia = completion_via
        self.completion_env_var = check_name(completion_env_var, "completion_env_var")
        self.completion_file_var = f"{completion_env_var}_FILE"
        self.prompt_env_var = (
            None if prompt_env_var is None else check_name(prompt_env_var, "prompt_env_var")
        )
        if self.prompt_env_var in (self.completion_env_var, self.completion_file_var):
            raise InvalidInputError(
                f"prompt_env_var and completion_env_var both use {self.prompt_env_var!r}; "
                "give them different names"
            )
        self.inherit_env = inherit_env
        self.env = check_env(env, self._reserved_names())
        if type(output_cap) is not int or output_cap < 64:
            raise InvalidInputError(
                f"output_cap must be an int of at least 64 characters, not {output_cap!r}"
            )
        self.output_cap = output_cap
        self.error_exit_codes = check_exit_codes(error_exit_codes)
        self._prompt_warned = False

    def _reserved_names(self) -> tuple[str, ...]:
        names = (self.completion_env_var, self.completion_file_var, self.prompt_env_var)
        return tuple(name for name in names if name is not None)

    async def grade(self, sample: StringThread) -> Grade:
        """Run the command for one sample and score its exit code."""
        return await self._run(sample, self.timeout)

    async def _grade_within(self, sample: StringThread, seconds: float) -> Grade:
        # The grader's own timeout is the command's: the command is ended at it and its
        # processes are gone before the grade returns (a cancelled grade would end them
        # only after it had returned). A default from where the grader is used, for a
        # grader without its own, bounds the grade as on any grader.
        if seconds != self.timeout:
            return await super()._grade_within(sample, seconds)
        self._timeout_applied = True
        return await self._run(sample, seconds)

    async def _run(self, sample: StringThread, limit: float | None) -> Grade:
        if not isinstance(sample, StringThread):
            raise InvalidTypeError(
                f"CommandGrader grades a StringThread, not {type(sample).__name__}"
            )
        completion = sample.completion() or ""
        prompt = sample.last_user_content() or ""
        notes: list[str] = []
        env = self._environment(prompt, notes)
        data = utf8_bytes(completion)
        if self.cwd is not None and not os.path.isdir(self.cwd):
            raise GradingError(
                f"cwd {self.cwd!r} does not exist or is not a directory; create it, or pass "
                "the directory the command should run in as cwd="
            )
        if self.completion_via == "env":
            env[self.completion_env_var.encode()] = self._env_value(data)
        path = None
        try:
            if self.completion_via == "file":
                descriptor, path = tempfile.mkstemp(prefix="gradewire-completion-", suffix=".txt")
                with open(descriptor, "wb") as file:
                    file.write(data)
                env[self.completion_file_var.encode()] = os.fsencode(path)
            result = await run_process(
                self.argv,
                cwd=self.cwd,
                env=env,
                stdin_data=data if self.completion_via == "stdin" else None,
                timeout=limit,
                output_cap=self.output_cap,
            )
        except OSError as exc:
            raise spawn_error(
                exc, self.argv, self.cwd, shell=isinstance(self.command, str)
            ) from exc
        finally:
            if path is not None:
                with contextlib.suppress(FileNotFoundError):  # the command removed it
                    os.unlink(path)
        if result.timed_out and self.timeout_score is None:
            assert limit is not None  # only a bound can run out
            raise GradeTimeoutError(self.grader_key, limit)
        return self._score(result, notes, prompt, completion, limit)

    def _environment(self, prompt: str, notes: list[str]) -> dict[bytes, bytes]:
        env = dict(os.environb) if self.inherit_env else {}
        for name, value in self.env.items():
            if value is None:
                env.pop(name.encode(), None)
            else:
                env[name.encode()] = utf8_bytes(value)
        for name in self._reserved_names():
            env.pop(name.encode(), None)  # never a stale value from the parent process
        if self.prompt_env_var is not None:
            encoded = utf8_bytes(prompt)
            problem = env_problem(self.prompt_env_var, encoded)
            if problem is None:
                env[self.prompt_env_var.encode()] = encoded
            else:
                notes.append(f"${self.prompt_env_var} is not set: the prompt {problem}")
                if not self._prompt_warned:
                    # Once per grader: a long-prompt dataset would repeat it per sample.
                    self._prompt_warned = True
                    logger.warning(
                        "grader %r: $%s is left unset for samples whose prompt it cannot "
                        "hold (this one %s); pass prompt_env_var=None if it is not needed",
                        self.grader_key,
                        self.prompt_env_var,
                        problem,
                    )
        return env

    def _env_value(self, data: bytes) -> bytes:
        problem = env_problem(self.completion_env_var, data)
        if problem is not None:
            raise GradingError(
                f"the completion cannot go in ${self.completion_env_var}: it {problem}; "
                "pass completion_via='stdin' or completion_via='file' instead"
            )
        return data

    def _score(
        self,
        result: ProcessResult,
        notes: list[str],
        prompt: str,
        completion: str,
        limit: float | None,
    ) -> Grade:
        code = result.exit_code
        output = result.stderr.strip() or result.stdout.strip()
        tail = output[-_REASON_TAIL:]
        if not result.timed_out and code in self.error_exit_codes:
            raise exit_error(self._shown(), code, tail)
        if result.timed_out:
            assert self.timeout_score is not None  # else the timeout was raised
            value = self.timeout_score
            reasoning = f"{outcome_reasoning(result, limit)}, scored {value:g} (timeout_score)"
        else:
            value = 1.0 if code == 0 else 0.0
            reasoning = outcome_reasoning(result, limit)
        if value == 0.0 and tail:
            reasoning += f"; output tail: {tail}"
        if result.killed_leftovers:
            notes.append("processes left running by the command were ended")
        if not result.output_complete:
            notes.append("output may be incomplete: a process outside the group held the pipes")
        info: dict[str, Any] = {
            "command": list(self.argv),
            "cwd": self.cwd,
            "exit_code": code,
            "timed_out": result.timed_out,
            "duration_s": result.duration_s,
            "stdout": result.stdout,
            "stderr": result.stderr,
            "completion_via": self.completion_via,
            "killed_leftovers": result.killed_leftovers,
            "notes": notes,
        }
        log: dict[str, Any] = {
            "score": value,
            "exit_code": code,
            "duration_s": result.duration_s,
            "timed_out": result.timed_out,
        }
        if self.sample_tables:
            log.update(prompt=prompt, completion=completion, reasoning=reasoning)
        self.add_log(log)
        return Grade(value, self.grader_key, reasoning, info=info)

    def _shown(self) -> str:
        return repr(self.command) if isinstance(self.command, str) else shlex.join(self.argv)

    def __repr__(self) -> str:
        return f"CommandGrader(grader_key={self.grader_key!r}, command={self.command!r})"
