"""Turning one grader's attempt on a sample into a stored `GradeOutcome`."""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Mapping
from typing import Any

from gradewire.core import (
    BaseGrader,
    Grade,
    GradeTimeoutError,
    GradingError,
    IgnoreGradeException,
    ModelCallError,
    OutputParserException,
    StringThread,
)
from gradewire.core._failure_records import log_fields
from gradewire.eval.runs._records import GradeOutcome, Status
from gradewire.eval.runs._samples import canonical_json
from gradewire.eval.runs._values import ValueRefused, stored_value

__all__ = ["describe", "error_kind", "grade_outcome", "spec_hash"]


def spec_hash(grader: BaseGrader) -> str:
    """Hash of the grader's spec: resumed runs re-grade a grader whose spec changed.

    A grader built by the factory has its resolved spec; another grader is known by its
    class, its key and (`BaseGrader.from_function`) its function's name (`describe`), so
    a change to its code that keeps those goes unnoticed (re-grade with a new key or a
    new folder).
    """
    spec = getattr(grader, "spec", None)
    if isinstance(spec, Mapping):
        text = canonical_json(spec)
    else:
        described = describe(grader)
        text = f"{described['class']}:{grader.grader_key}"
        if "function" in described:
            text += f":{described['function']}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def describe(grader: BaseGrader) -> dict[str, Any]:
    """The grader's spec as a run's config records it (a stand-in for one without a spec)."""
    spec = getattr(grader, "spec", None)
    if isinstance(spec, Mapping):
        return dict(spec)
    kind = type(grader)
    described = {"key": grader.grader_key, "class": f"{kind.__module__}.{kind.__qualname__}"}
    function = getattr(grader, "fn", None)
    if callable(function):
        module = getattr(function, "__module__", None) or ""
        name = getattr(function, "__qualname__", None) or type(function).__qualname__
        described["function"] = f"{module}:{name}"
    return described


async def grade_outcome(
    grader: BaseGrader,
    thread: StringThread,
    spec: str,
    timeout: float | None = None,
    *,
    input_hash: str = "",
) -> GradeOutcome:
    """Grade one sample; an error or abstention becomes an outcome, never an exception.

    The grader logs the sample as `BaseGrader.grade_many` would (errors and abstentions
    counted), so its `get_logs()` stays right. ``timeout`` is the default for a grader
    that sets none; a timed-out grade is an ``error`` of kind ``"timeout"``.
    ``input_hash`` (`EvalSample.input_hash`) is recorded in the outcome: it is stale once
    the sample's input changes.
    """
    start = time.perf_counter()
    # The one attempt method every grader shares: it logs and returns instead of raising.
    result = await grader._attempt(thread, timeout)
    seconds = time.perf_counter() - start
    if isinstance(result, Grade):
        try:
            # Stored as data rows are (a date as text, NaN as null): what JSON cannot hold
            # makes an error outcome now, not a crash writing the results line.
            grade = stored_value(result.to_dict(), ("grade",))
        except ValueRefused as exc:
            result = GradingError(f"the grade cannot be stored in the run folder: {exc}")
        else:
            usage = _tree_usage(result)
            return GradeOutcome("ok", spec, grade, None, usage, seconds, input_hash)
    usage = _numbers(log_fields(result))
    message = result.reason if isinstance(result, IgnoreGradeException) else _error(result)
    status: Status = "abstained" if isinstance(result, IgnoreGradeException) else "error"
    kind = None if isinstance(result, IgnoreGradeException) else error_kind(result)
    return GradeOutcome(status, spec, None, message, usage, seconds, input_hash, kind)


def error_kind(exc: BaseException) -> str:
    """What kind of failure ``exc`` is, as ``summary.json`` counts it.

    ``timeout`` (the grade took longer than its timeout); an OpenAI grader's own kind
    (``invalid_variable_error``, ``model_grader_parse_error``, ...) when it logged one;
    else ``parse`` (a judge's answer could not be read), ``refusal`` (the model declined),
    ``connection`` (the judge or endpoint could not be reached or timed out),
    ``http_status`` (it answered with an error status), or ``exception`` (the grader
    raised anything else: a bug, a bad spec).
    """
    if isinstance(exc, GradeTimeoutError):
        return "timeout"
    logged = log_fields(exc).get("error_kind")
    if isinstance(logged, str) and logged:
        return logged
    if isinstance(exc, OutputParserException):
        return "parse"
    if isinstance(exc, ModelCallError):
        status = getattr(exc, "status", None)
        if status == 200:  # the chat client reports a refusal as an answer of status 200
            return "refusal"
        return "connection" if status is None else "http_status"
    return "exception"


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _numbers(fields: Mapping[str, Any]) -> dict[str, float]:
    return {
        key: value
        for key, value in fields.items()
        if isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)  # the results line is strict JSON
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
    return _numbers(total)
