"""Turning one grader's attempt on a sample into a stored `GradeOutcome`."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping
from typing import Any

from gradewire.core import (
    BaseGrader,
    Grade,
    GradeTimeoutError,
    IgnoreGradeException,
    StringThread,
)
from gradewire.core._failure_records import log_fields
from gradewire.eval._records import GradeOutcome, Status
from gradewire.eval._samples import canonical_json

__all__ = ["grade_outcome", "spec_hash"]


def spec_hash(grader: BaseGrader) -> str:
    """Hash of the grader's spec: resumed runs re-grade a grader whose spec changed.

    A grader built by the factory has its resolved spec; another grader is known only by
    its class and key, so a change to its code goes unnoticed (re-grade with a new key
    or a new folder).
    """
    spec = getattr(grader, "spec", None)
    if isinstance(spec, Mapping):
        text = canonical_json(spec)
    else:
        kind = type(grader)
        text = f"{kind.__module__}.{kind.__qualname__}:{grader.grader_key}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


async def grade_outcome(
    grader: BaseGrader, thread: StringThread, spec: str, timeout: float | None = None
) -> GradeOutcome:
    """Grade one sample; an error or abstention becomes an outcome, never an exception.

    The grader logs the sample as `BaseGrader.grade_many` would (errors and abstentions
    counted), so its `get_logs()` stays right. ``timeout`` is the default for a grader
    that sets none; a timed-out grade is an ``error`` of kind ``"timeout"``.
    """
    start = time.perf_counter()
    # The one attempt method every grader shares: it logs and returns instead of raising.
    result = await grader._attempt(thread, timeout)
    seconds = time.perf_counter() - start
    if isinstance(result, Grade):
        return GradeOutcome("ok", spec, result.to_dict(), None, _tree_usage(result), seconds)
    usage = _numbers(log_fields(result))
    message = str(result) if isinstance(result, IgnoreGradeException) else _error(result)
    status: Status = "abstained" if isinstance(result, IgnoreGradeException) else "error"
    kind = "timeout" if isinstance(result, GradeTimeoutError) else None
    return GradeOutcome(status, spec, None, message, usage, seconds, kind)


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _numbers(fields: Mapping[str, Any]) -> dict[str, float]:
    return {
        key: value
        for key, value in fields.items()
        if isinstance(value, (int, float)) and not isinstance(value, bool)
    }


def _tree_usage(grade: Grade) -> dict[str, float]:
    """Judge usage summed over the grade tree (a combined grader's judges each report theirs)."""
    total: dict[str, float] = {}
    stack = [grade]
    while stack:
        node = stack.pop()
        usage = node.info.get("usage")
        if isinstance(usage, Mapping):
            for key, value in _numbers(usage).items():
                total[key] = total.get(key, 0) + value
        stack.extend(node.children)
    return total
