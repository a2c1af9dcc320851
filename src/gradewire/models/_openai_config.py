"""Checks and defaults of the client settings, with messages that say what to pass.

The cache, concurrency and retry checks serve every `ModelClient`; the base URL and key
checks are OpenAI's (`OpenAIProvider`, and HUD's and OpenAI's layers).
"""

from __future__ import annotations

import dataclasses
import os
import urllib.parse

from gradewire.core._errors import InvalidInputError, InvalidTypeError
from gradewire.http._retry import RetryPolicy
from gradewire.models._judge_cache import JudgeCache

__all__ = [
    "DEFAULT_BASE_URL",
    "base_url_setting",
    "cache_setting",
    "check_public_key",
    "concurrency_setting",
    "retry_setting",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_PUBLIC_HOST = "api.openai.com"


def base_url_setting(base_url: str | None) -> str:
    url = base_url if base_url is not None else os.environ.get("OPENAI_BASE_URL") or ""
    url = url.strip() or DEFAULT_BASE_URL
    if not url.startswith(("http://", "https://")):
        raise InvalidInputError(
            f"base_url must start with http:// or https://, not {url!r}; e.g. "
            "'http://localhost:8000/v1' for a local vLLM server"
        )
    return url.rstrip("/")


def cache_setting(cache: JudgeCache | str | os.PathLike[str] | None) -> JudgeCache | None:
    if cache is None or isinstance(cache, JudgeCache):
        return cache
    if isinstance(cache, (str, os.PathLike)):
        return JudgeCache(cache)
    raise InvalidTypeError(f"cache must be a JudgeCache or a file path, not {type(cache).__name__}")


def check_public_key(base_url: str, key: str | None, *, base_url_given: bool) -> None:
    """Refuse to target OpenAI's public API without a key: every call would fail with 401."""
    if key and key.strip():
        return
    if urllib.parse.urlsplit(base_url).hostname != _PUBLIC_HOST:
        return
    where = "with this base_url" if base_url_given else "with no OPENAI_BASE_URL set"
    raise InvalidInputError(
        f"{where} the judge calls go to OpenAI's public API ({base_url}), and no API key is "
        "set: set OPENAI_API_KEY (or pass api_key=), or point OPENAI_BASE_URL (or base_url=) "
        "at your own server, e.g. http://127.0.0.1:8000/v1 for a local vLLM or llama.cpp "
        "server"
    )


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
