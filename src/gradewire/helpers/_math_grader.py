"""MathGrader: `math_match` as a grader, each kind of outcome counted apart in its logs."""

from __future__ import annotations

import asyncio
import math
from typing import Literal

from gradewire.core._errors import IgnoreGradeException, InvalidInputError, InvalidTypeError
from gradewire.core._grade import Grade
from gradewire.core._grader import BaseGrader
from gradewire.core._thread import StringThread
from gradewire.helpers._math import MathParseError, math_match

__all__ = ["MathGrader"]


class MathGrader(BaseGrader):
    r"""Grade the completion's final math answer against ``metadata[expected_key]``.

    Four outcomes, each apart in `get_logs()`: a right answer (``score`` 1.0), a wrong one
    (0.0), an answer Math-Verify cannot read (0.0 with ``unreadable_answer`` 1, so
    ``unreadable_answer/mean`` is their share; or an error with ``unreadable="error"``), and
    a check that overran ``timeout`` (an error, in ``math_timeout/count`` beside
    ``score/error_count``). An unreadable reference answer is an error
    (``math_parse_error/count``); a sample with no reference abstains.

    An unreadable answer scores 0.0 by default because in RL it is the policy's doing: were
    it left out, a policy could learn to dodge a low reward by writing no answer at all.

    Example:
        >>> grader = MathGrader("math")  # reads metadata["answer"]
        >>> sample = StringThread([("user", "1/2 + 1/4?"), ("assistant", "$\\\\boxed{3/4}$")],
        ...                       metadata={"answer": "0.75"})
        >>> run_sync(grader(sample)).value  # doctest: +SKIP
        1.0
    """

    # BaseGrader.timeout, given its own meaning here: the bound of each Math-Verify check
    # (an overrun is counted apart, as MathTimeoutError), as BashGrader's is the command's.
    timeout: float = 5.0

    def __init__(
        self,
        grader_key: str = "math",
        *,
        expected_key: str = "answer",
        timeout: float = 5.0,
        unreadable: Literal["zero", "error"] = "zero",
        sample_tables: bool = False,
    ) -> None:
        """Set up the grader.

        Args:
            grader_key: The grader's name in logs.
            expected_key: The metadata key holding the reference answer.
            timeout: Seconds one check may take (see `math_match`).
            unreadable: What an answer Math-Verify cannot read gets: ``"zero"`` (0.0,
                counted in ``unreadable_answer``) or ``"error"`` (a `MathParseError`).
            sample_tables: Log prompts and completions for the sample tables.
        """
        super().__init__(grader_key, sample_tables=sample_tables)
        if not isinstance(expected_key, str) or not expected_key:
            raise InvalidTypeError(f"expected_key must be a non-empty str, not {expected_key!r}")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
            raise InvalidTypeError(f"timeout must be a number of seconds, not {timeout!r}")
        if not math.isfinite(timeout) or timeout <= 0:
            raise InvalidInputError(f"timeout must be finite and > 0 seconds, not {timeout!r}")
        if unreadable not in ("zero", "error"):
            raise InvalidInputError(f"unreadable must be 'zero' or 'error', not {unreadable!r}")
        self.expected_key = expected_key
        self.timeout = float(timeout)
        self.unreadable = unreadable

    async def grade(self, sample: StringThread) -> Grade:
        """Check the last assistant turn's answer (in a thread: the check waits on a worker)."""
        if self.expected_key not in sample.metadata:
            raise IgnoreGradeException(
                f"the sample has no metadata[{self.expected_key!r}] to check the answer against"
            )
        expected = sample.metadata[self.expected_key]
        completion = sample.completion() or ""
        try:
            value = await asyncio.to_thread(math_match, completion, expected, timeout=self.timeout)
        except MathParseError as exc:
            if exc.side != "answer" or self.unreadable == "error":
                raise
            return self._logged(sample, 0.0, 1, "no answer Math-Verify can read")
        reasoning = "equal to the reference" if value == 1.0 else "not equal to the reference"
        return self._logged(sample, value, 0, reasoning)

    def _logged(self, sample: StringThread, value: float, unreadable: int, why: str) -> Grade:
        record: dict[str, object] = {
            "score": value,
            "unreadable_answer": unreadable,
            "reasoning": why,
        }
        if self.sample_tables:
            record["prompt"] = sample.last_user_content() or ""
            record["completion"] = sample.completion() or ""
        self.add_log(record)
        return Grade(value, self.grader_key, why)
