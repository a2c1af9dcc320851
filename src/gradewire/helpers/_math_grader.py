"""MathGrader: `math_match` as a grader, each kind of outcome counted apart in its logs."""

from __future__ import annotations

from typing import Literal

from gradewire.core._errors import IgnoreGradeException, InvalidInputError, InvalidTypeError
from gradewire.core._grade import Grade
from gradewire.core._grader import BaseGrader
from gradewire.core._thread import StringThread
from gradewire.helpers._math import MathParseError, MathTimeoutError, math_check

__all__ = ["MathGrader"]


class MathGrader(BaseGrader):
    r"""Grade the completion's final math answer against ``metadata[expected_key]``.

    Four outcomes, each apart in `get_logs()`: a right answer (``score`` 1.0), a wrong one
    (0.0), an answer Math-Verify cannot read (0.0 with ``unreadable_answer`` 1, so
    ``unreadable_answer/mean`` is their share; or an error with ``unreadable="error"``), and
    a grade that overran ``timeout`` (a timeout outcome, `GradeTimeoutError`, in
    ``score/timeout_count`` beside ``score/error_count``; its check's worker process is
    killed; also in ``math_timeout/count``). The timeout counts from the moment a worker
    process takes the check: starting the pool's workers (importing sympy, seconds on a
    busy machine) is not the answer's doing and never times a grade out. An unreadable
    reference answer is an error (``math_parse_error/count``); a sample with no reference
    abstains.

    An unreadable answer scores 0.0 by default because in RL it is the policy's doing: were
    it left out, a policy could learn to dodge a low reward by writing no answer at all.

    Example:
        >>> grader = MathGrader("math")  # reads metadata["answer"]
        >>> sample = StringThread([("user", "1/2 + 1/4?"), ("assistant", "$\\\\boxed{3/4}$")],
        ...                       metadata={"answer": "0.75"})
        >>> run_sync(grader(sample)).value  # doctest: +SKIP
        1.0
    """

    def __init__(
        self,
        grader_key: str = "math",
        *,
        expected_key: str = "answer",
        timeout: float | None = 5.0,
        unreadable: Literal["zero", "error"] = "zero",
        sample_tables: bool = False,
    ) -> None:
        """Set up the grader.

        Args:
            grader_key: The grader's name in logs.
            expected_key: The metadata key holding the reference answer.
            timeout: Seconds one grade may take (`BaseGrader.timeout`): its one check,
                from the moment a worker takes it; None: no bound of its own.
            unreadable: What an answer Math-Verify cannot read gets: ``"zero"`` (0.0,
                counted in ``unreadable_answer``) or ``"error"`` (a `MathParseError`).
            sample_tables: Log prompts and completions for the sample tables.
        """
        super().__init__(grader_key, sample_tables=sample_tables, timeout=timeout)
        if not isinstance(expected_key, str) or not expected_key:
            raise InvalidTypeError(f"expected_key must be a non-empty str, not {expected_key!r}")
        if unreadable not in ("zero", "error"):
            raise InvalidInputError(f"unreadable must be 'zero' or 'error', not {unreadable!r}")
        self.expected_key = expected_key
        self.unreadable = unreadable

    async def grade(self, sample: StringThread) -> Grade:
        """Check the last assistant turn's answer in a worker process, bounded by `timeout`."""
        if self.expected_key not in sample.metadata:
            raise IgnoreGradeException(
                f"the sample has no metadata[{self.expected_key!r}] to check the answer against"
            )
        expected = sample.metadata[self.expected_key]
        completion = sample.completion() or ""
        try:
            # Cancelling the check (Ctrl-C, a default timeout from grade_many) kills its worker.
            value = await math_check(completion, expected, timeout=self.timeout)
        except MathTimeoutError as exc:
            exc.grader_key = self.grader_key  # this grader's timeout outcome
            raise
        except MathParseError as exc:
            if exc.side != "answer" or self.unreadable == "error":
                raise
            return self._logged(sample, 0.0, 1, "no answer Math-Verify can read")
        reasoning = "equal to the reference" if value == 1.0 else "not equal to the reference"
        return self._logged(sample, value, 0, reasoning)

    async def _grade_within(self, sample: StringThread, seconds: float) -> Grade:
        # The grader's own timeout is its check's, enforced in grade() from the moment a
        # worker takes the check; a default from where the grader is used, for a grader
        # without its own, bounds the grade as on any grader.
        if seconds != self.timeout:
            return await super()._grade_within(sample, seconds)
        self._timeout_applied = True
        return await self.grade(sample)

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
