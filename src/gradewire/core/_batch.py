"""The check that a batch handed to `grade_many` holds samples, made before any is graded."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from gradewire.core._errors import InvalidTypeError
from gradewire.core._thread import StringThread

__all__ = ["thread_batch"]

_BUILD = 'StringThread([("user", prompt), ("assistant", completion)])'


def thread_batch(samples: Iterable[StringThread]) -> list[StringThread]:
    """``samples`` as a list, or `InvalidTypeError` naming the first that is no `StringThread`.

    Without it a dict or a str is graded anyway: each costs an error record, or a grader
    that only reads ``str(sample)`` scores it.
    """
    if isinstance(samples, StringThread):
        raise InvalidTypeError(
            "grade_many() takes a list of samples, not one StringThread: pass [sample], or "
            "grade a single one with `await grader(sample)`"
        )
    if isinstance(samples, str | bytes | Mapping):
        raise InvalidTypeError(
            f"grade_many() takes a list of StringThread samples, not a {type(samples).__name__}"
            f"; build each with {_BUILD}"
        )
    batch = list(samples)
    for index, sample in enumerate(batch):
        if not isinstance(sample, StringThread):
            raise InvalidTypeError(
                f"grade_many() takes StringThread samples, but sample {index} is a "
                f"{type(sample).__name__}; {_hint(sample)}. Nothing was graded"
            )
    return batch


def _hint(sample: object) -> str:
    if isinstance(sample, Mapping):
        return (
            'build it with StringThread.from_messages(item["messages"]) from OpenAI-style '
            "messages, or StringThread.from_dict(item) from StringThread.to_dict() output"
        )
    return f"build it with {_BUILD}"
