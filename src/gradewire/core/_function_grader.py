"""FunctionGrader: what `BaseGrader.from_function` builds."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

from gradewire.core._errors import IgnoreGradeException, InvalidTypeError
from gradewire.core._grade import Grade
from gradewire.core._grader import BaseGrader, GradeFunction
from gradewire.core._thread import StringThread

__all__ = ["FunctionGrader"]


class FunctionGrader(BaseGrader):
    """A grader around a sync or async function returning a float, a Grade, or None."""

    def __init__(
        self,
        grader_key: str,
        fn: GradeFunction,
        *,
        sample_tables: bool = False,
        in_thread: bool = False,
    ) -> None:
        super().__init__(grader_key, sample_tables=sample_tables)
        if not callable(fn):
            raise InvalidTypeError(
                f"from_function needs a function of a sample, not {type(fn).__name__}"
            )
        self.fn = fn
        self._awaits = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
            getattr(fn, "__call__", None)  # noqa: B004 - async callable objects
        )
        self.in_thread = in_thread and not self._awaits

    async def grade(self, sample: StringThread) -> Grade:
        """Call the function and turn its result into a logged Grade."""
        result: Any = (
            await asyncio.to_thread(self.fn, sample) if self.in_thread else self.fn(sample)
        )
        if self._awaits or inspect.isawaitable(result):
            result = await result
        kind = type(result)
        if kind is float or kind is int:
            grade = Grade(result, self.grader_key)
        elif isinstance(result, Grade):
            grade = (
                result
                if result.grader_key == self.grader_key
                else result.replace(grader_key=self.grader_key)
            )
        elif result is None:
            raise IgnoreGradeException(f"{_name(self.fn)} returned None")
        elif isinstance(result, (str, bytes)) or not hasattr(result, "__float__"):
            raise InvalidTypeError(
                f"{_name(self.fn)} returned {type(result).__name__}; return a float, "
                "a Grade, or None to abstain"
            )
        else:  # bools and numpy numbers
            grade = Grade(result, self.grader_key)
        log: dict[str, Any] = {"score": grade.value}
        if grade.reasoning is not None:
            log["reasoning"] = grade.reasoning
        if self.sample_tables:
            log["prompt"] = sample.last_user_content() or ""
            log["completion"] = sample.completion() or ""
        self.add_log(log)
        return grade


def _name(fn: object) -> str:
    return f"grading function {getattr(fn, '__qualname__', type(fn).__name__)}()"
