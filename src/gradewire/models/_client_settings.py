"""Checks of the client core's own settings, with messages that say what to pass."""

from __future__ import annotations

import dataclasses
import os

from gradewire.core._errors import InvalidInputError, InvalidTypeError
from gradewire.http._retry import RetryPolicy
from gradewire.models._judge_cache import JudgeCache

__all__ = ["cache_setting", "concurrency_setting", "retry_setting"]


def cache_setting(cache: JudgeCache | str | os.PathLike[str] | None) -> JudgeCache | None:
    if cache is None or isinstance(cache, JudgeCache):
        return cache
    if isinstance(cache, (str, os.PathLike)):
        return JudgeCache(cache)
    raise InvalidTypeError(f"cache must be a JudgeCache or a file path, not {type(cache).__name__}")


def concurrency_setting(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidTypeError(f"max_concurrency must be an int >= 1, not {value!r}")
    if value < 1:
        raise InvalidInputError(f"max_concurrency must be >= 1, not {value}")
    return value


def retry_setting(retry: object, max_attempts: int | None) -> RetryPolicy:
    if retry is not None and not isinstance(retry, RetryPolicy):
        raise InvalidTypeError(f"retry must be a RetryPolicy, not {type(retry).__name__}")
    policy = retry or RetryPolicy()
    if max_attempts is not None:
        policy = dataclasses.replace(policy, max_attempts=max_attempts)
    return policy
