"""python: OpenAI's python grader, run in a process of its own with a timeout."""

from __future__ import annotations

import ast
import json
import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from gradewire.core._errors import GradewireError, InvalidInputError
from gradewire.core._grade import Grade
from gradewire.core._thread import StringThread
from gradewire.openai._base import OpenAIGrader
from gradewire.openai._errors import (
    ErrorKind,
    OpenAIGraderError,
    PythonGraderRuntimeError,
    UnresponsiveRewardError,
)
from gradewire.openai._sample import OpenAISample
from gradewire.tools._process import run_process

__all__ = ["PythonGrader"]

logger = logging.getLogger("gradewire")

_RUNNER = Path(__file__).with_name("_python_runner.py")
_OUTPUT_CAP = 16_000
# What the child gets of this process's environment: enough to run Python, never the
# API keys and tokens it holds.
_KEPT_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "HOME", "TMPDIR", "TZ")


def _defines_grade(source: str, where: str) -> None:
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise InvalidInputError(
            f"{where}.source does not parse: {exc.msg} (line {exc.lineno})"
        ) from None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "grade":
            return
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "grade" for t in node.targets
        ):
            return
    raise InvalidInputError(
        f"{where}.source defines no top-level function grade(sample, item); OpenAI's python "
        "grader calls grade(sample, item) and takes the number it returns"
    )


class PythonGrader(OpenAIGrader):
    """OpenAI's ``python`` grader: ``grade(sample, item)`` in a separate Python process.

    The source is code, run with your user's file access (not in OpenAI's sandbox): only
    run configs you trust. Each sample runs in a fresh ``python -I`` process whose
    environment holds only ``PATH``, ``HOME``, ``TMPDIR``, ``TZ`` and the locale, under the
    same supervisor as `gradewire.tools.CommandGrader`: past ``timeout`` the process and
    everything it started are ended (SIGTERM, then SIGKILL), and the sample is an
    ``unresponsive_reward_error``, a timeout outcome (``score/timeout_count``) as on every
    grader. An exception in ``grade``, or a result that is not a
    finite number, is a ``python_grader_runtime_error``.

    What the code can read of other processes: on Linux, where unprivileged user
    namespaces are allowed (most distributions; not in many containers), it runs in user,
    PID and mount namespaces of its own with a fresh ``/proc``, as a user without
    capabilities, so it sees no other process: neither the environment nor the command
    line of this process (your API keys), of the supervisor, or of the other samples'
    graders. ``grade.info["isolated"]`` says whether that held. Where it did not (another
    system, or namespaces refused), the code runs as your user and can read, through
    ``/proc/<pid>/environ`` and ``cmdline``, whatever your user can read of your other
    processes, this one included; a warning says so once. The supervisor and its workers
    hold no secrets in any case: they start with the environment above, and on Linux
    they are not dumpable, so a process of your user cannot read their memory.

    ``sample`` is ``{"output_text", "output_json", "output_tools", "choices"}`` and
    ``item`` the sample's data row, as OpenAI passes them.
    """

    error_kinds: ClassVar[tuple[ErrorKind, ...]] = (
        "python_grader_runtime_error",
        "python_grader_server_error",
        "unresponsive_reward_error",
        "other_error",
    )

    def __init__(
        self, grader_key: str, config: Mapping[str, Any], *, where: str, timeout: float
    ) -> None:
        if os.name != "posix":
            raise GradewireError(
                "the python grader needs a POSIX system (Linux, macOS, WSL): it ends the "
                "grader's processes by process group, which native Windows does not have"
            )
        super().__init__(grader_key, config, pass_threshold=config.get("pass_threshold"))
        self.source: str = config["source"]
        _defines_grade(self.source, where)
        self.process_timeout = timeout
        # Always bounded (by the process's timeout): its timeouts are counted, 0 included.
        self._timeout_applied = True

    async def grade(self, sample: StringThread) -> Grade:
        """Run ``grade(sample, item)`` for one sample in its own process."""
        seen = OpenAISample(sample)
        payload = {"source": self.source, "sample": seen.sample_namespace(), "item": seen.item}
        try:
            data = json.dumps(payload, ensure_ascii=False, default=str).encode()
        except ValueError as exc:
            raise OpenAIGraderError(f"the sample cannot be sent to the grader: {exc}") from None
        env = {
            name.encode(): value.encode()
            for name in _KEPT_ENV
            if (value := os.environ.get(name)) is not None
        }
        try:
            result = await run_process(
                [sys.executable, "-I", str(_RUNNER)],
                cwd=None,
                env=env,
                stdin_data=data,
                timeout=self.process_timeout,
                output_cap=_OUTPUT_CAP,
            )
        except OSError as exc:
            raise OpenAIGraderError(
                f"the python grader's process could not start: {exc}",
                kind="python_grader_server_error",
            ) from exc
        if result.timed_out:
            raise UnresponsiveRewardError(
                f"the python grader did not return within {self.process_timeout:g} s; its "
                "processes were ended (raise python_timeout if it needs longer)",
                grader_key=self.grader_key,
                seconds=self.process_timeout,
            )
        answer = _answer(result.stdout)
        tail = result.stderr.strip()[-1000:]
        if answer is None:
            raise PythonGraderRuntimeError(
                f"the python grader's process ended (exit code {result.exit_code}) without a "
                f"result{'; its output ends: ' + tail if tail else ''}"
            )
        if "error" in answer:
            detail = str(answer.get("traceback") or answer["error"]).strip()
            raise PythonGraderRuntimeError(f"the python grader failed: {detail[-2000:]}")
        score = float(answer["score"])
        isolated = answer.get("isolated") is True
        if not isolated:
            _warn_not_isolated()
        info = {"stderr": result.stderr, "duration_s": result.duration_s, "isolated": isolated}
        return self.scored(
            score,
            sample,
            reasoning=f"grade() returned {score:g}",
            info=info,
            log={"duration_s": result.duration_s},
        )


_warned = False


def _warn_not_isolated() -> None:
    global _warned
    if not _warned:
        _warned = True
        logger.warning(
            "the python grader's code ran without namespaces of its own (this system does "
            "not allow unprivileged user namespaces): it can read the environment and "
            "command line of your user's other processes through /proc, this grading "
            "process included; keep API keys out of this process's environment, or run "
            "only grader code you trust"
        )


def _answer(stdout: str) -> dict[str, Any] | None:
    lines = stdout.strip().splitlines()
    if not lines:
        return None
    try:
        answer = json.loads(lines[-1])
    except ValueError:
        return None
    if not isinstance(answer, dict) or not ({"score", "error"} & set(answer)):
        return None
    return answer
