"""python: OpenAI's python grader, run in a process of its own with a timeout."""

from __future__ import annotations

import ast
import json
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

    The source is code, run with your privileges (not in OpenAI's sandbox): only run
    configs you trust. Each sample runs in a fresh ``python -I`` process that sees none of
    this process's environment but ``PATH``, ``HOME`` and the locale, under the same
    supervisor as `gradewire.tools.CommandGrader`: past ``timeout`` the process and
    everything it started are ended (SIGTERM, then SIGKILL), and the sample is an
    ``unresponsive_reward_error``. An exception in ``grade``, or a result that is not a
    finite number, is a ``python_grader_runtime_error``.

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
                "processes were ended (raise python_timeout if it needs longer)"
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
        info = {"stderr": result.stderr, "duration_s": result.duration_s}
        return self.scored(
            score,
            sample,
            reasoning=f"grade() returned {score:g}",
            info=info,
            log={"duration_s": result.duration_s},
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
