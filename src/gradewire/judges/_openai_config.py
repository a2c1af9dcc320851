"""Checks and defaults for `OpenAIChatModel`'s settings, with messages that say what to pass."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from gradewire.core._errors import InvalidInputError, InvalidTypeError
from gradewire.judges._judge_cache import JudgeCache

__all__ = [
    "DEFAULT_BASE_URL",
    "base_url_setting",
    "cache_setting",
    "extra_body_setting",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_RESERVED_BODY_KEYS = frozenset({"model", "messages", "stream"})


def base_url_setting(base_url: str | None) -> str:
    url = base_url if base_url is not None else os.environ.get("OPENAI_BASE_URL") or ""
    url = url.strip() or DEFAULT_BASE_URL
    if not url.startswith(("http://", "https://")):
        raise InvalidInputError(
            f"base_url must start with http:// or https://, not {url!r}; e.g. "
            "'http://localhost:8000/v1' for a local vLLM server"
        )
    return url.rstrip("/")


def extra_body_setting(extra_body: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if extra_body is None:
        return None
    if not isinstance(extra_body, Mapping):
        raise InvalidTypeError(f"extra_body must be a dict, not {type(extra_body).__name__}")
    reserved = sorted(_RESERVED_BODY_KEYS & set(extra_body))
    if reserved:
        raise InvalidInputError(
            f"extra_body cannot set {reserved}: the client sets model and messages itself and "
            "does not stream; pass the model as the first argument"
        )
    return dict(extra_body)


def cache_setting(cache: JudgeCache | str | os.PathLike[str] | None) -> JudgeCache | None:
    if cache is None or isinstance(cache, JudgeCache):
        return cache
    if isinstance(cache, (str, os.PathLike)):
        return JudgeCache(cache)
    raise InvalidTypeError(f"cache must be a JudgeCache or a file path, not {type(cache).__name__}")
