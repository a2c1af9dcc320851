"""FailurePolicy: what every reward adapter does with a sample that got no grade.

Each adapter that hands rewards to a trainer (``trl_reward``, ``GradewireCallback``,
``RewardLogger``, ``openrlhf_reward_func``, ``verl_compute_score``, the verifiers
``Rubric``) takes one ``failure=FailurePolicy(...)``: the same three knobs under the same
names and defaults everywhere, declared here once. The adapters' older keywords
(``failure_value``, ``failure_score``, ``failure_reward``, ``max_error_rate``,
``error_window``) still work and warn (`DeprecationWarning`) with the new spelling.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from dataclasses import field
from typing import Any

from gradewire.core import InvalidInputError, InvalidTypeError
from gradewire.core._settings import check_fields, check_positive_int_or_none, checked_by
from gradewire.train._fail_fast import FailFast, check_max_error_rate

__all__ = ["FailurePolicy", "resolve_failure"]


def _rate(name: str, value: object) -> float | None:
    return check_max_error_rate(value)


def _failure_value(name: str, value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidTypeError(f"{name} must be a number or None, not {value!r}")
    if math.isinf(value):
        raise InvalidInputError(f"{name} must be finite (or NaN, or None), not {value!r}")
    return float(value)


@dataclasses.dataclass(frozen=True, kw_only=True)
class FailurePolicy:
    """What a reward adapter does when a grader fails or abstains on a sample.

    Every field is checked when the object is made. The same object works in every adapter
    (``trl_reward(grader, failure=FailurePolicy(max_error_rate=0.5))``).

    Attributes:
        max_error_rate: Fail fast: stop (raise `GraderFailingError`, with the grader's first
            error chained and its traceback in the message) once at least this share of a
            grader's window of samples failed. Abstentions are not failures. 1.0 (the
            default) stops when every sample of the window failed (a typo in a column name);
            None never stops (failures stay counted in ``<key>/error_count``).
        error_window: The window, in samples: a grader's last ``error_window`` samples,
            across batches. The window is checked after each batch once it is full; before
            that, after each batch of two or more samples, over the samples seen so far (so
            a batch-wise trainer such as TRL stops at its first all-failing step, while an
            adapter called once a sample, as veRL and OpenRLHF do, waits for a full window
            rather than stop on one unlucky sample). None: each batch on its own.
        failure_value: The reward a sample that got no grade is given. None (the default)
            gives no number: TRL gets None, which it masks (the completion is left out of
            that function's reward). An adapter whose trainer needs a number refuses
            None: OpenRLHF's call raises `GradingError` for such a sample; veRL and
            verifiers refuse the policy when it is built, and their default policies set
            0.0. A number is given to the sample and flagged (``<key>/error_count`` in
            ``extra_logs``, veRL's ``error`` key, verifiers' ``reward_masked``), so that it
            is never read as a real score. NaN is allowed where the trainer reads it as
            missing. (The reward server's ``ServerSettings.failure_value`` is the same
            value under the same name.)
    """

    max_error_rate: float | None = field(default=1.0, metadata=checked_by(_rate))
    error_window: int | None = field(default=64, metadata=checked_by(check_positive_int_or_none))
    failure_value: float | None = field(default=None, metadata=checked_by(_failure_value))

    def __post_init__(self) -> None:
        check_fields(self)

    def fail_fast(self, where: str) -> FailFast:
        """A fresh fail-fast bound under this policy; ``where`` names the adapter's call."""
        return FailFast(self.max_error_rate, self.error_window, where=where)


# The keywords adapters took before FailurePolicy, and the field each one is now.
_OLD_NAMES = {
    "failure_value": "failure_value",
    "failure_score": "failure_value",
    "failure_reward": "failure_value",
    "max_error_rate": "max_error_rate",
    "error_window": "error_window",
}


def resolve_failure(
    failure: FailurePolicy | None,
    old: dict[str, Any],
    *,
    where: str,
    default: FailurePolicy | None = None,
    stacklevel: int = 3,
) -> FailurePolicy:
    """The policy an adapter runs under: ``failure``, or ``default`` with the old keywords.

    Args:
        failure: The policy the caller passed, if any.
        old: The deprecated keywords the caller passed (``failure_score=0.0``...): each
            warns with its new spelling.
        where: The adapter's name, as the caller wrote it (``"verl_compute_score"``).
        default: The adapter's policy when none is given (default `FailurePolicy()`).
        stacklevel: Passed to `warnings.warn`, so the warning points at the caller.

    Raises:
        InvalidTypeError: ``failure`` is no `FailurePolicy`, or an unknown keyword.
        InvalidInputError: ``failure`` given together with old keywords.
    """
    if failure is not None and not isinstance(failure, FailurePolicy):
        raise InvalidTypeError(
            f"{where}(failure=...) takes a gradewire.train.FailurePolicy, not "
            f"{type(failure).__name__}"
        )
    unknown = sorted(set(old) - set(_OLD_NAMES))
    if unknown:
        raise InvalidTypeError(f"{where}() got an unexpected keyword argument {unknown[0]!r}")
    if not old:
        return failure if failure is not None else (default or FailurePolicy())
    if failure is not None:
        raise InvalidInputError(
            f"{where}() got failure=FailurePolicy(...) and the old keyword(s) "
            f"{', '.join(sorted(old))}: put every setting in the FailurePolicy"
        )
    replaced: dict[str, Any] = {}
    for name, value in old.items():
        new = _OLD_NAMES[name]
        warnings.warn(
            f"{where}({name}=...) is deprecated: pass failure=FailurePolicy({new}=...) "
            "(gradewire.train.FailurePolicy, the same in every reward adapter)",
            DeprecationWarning,
            stacklevel=stacklevel,
        )
        if new in replaced:
            raise InvalidInputError(f"{where}() got two spellings of {new}")
        replaced[new] = value
    return dataclasses.replace(default or FailurePolicy(), **replaced)
