"""OpenAI's base URL and key checks, with messages that say what to pass.

For `OpenAIProvider`, and for HUD's and OpenAI's layers, which read the same environment.
"""

from __future__ import annotations

import os
import urllib.parse

from gradewire.core._errors import InvalidInputError

__all__ = ["DEFAULT_BASE_URL", "base_url_setting", "check_public_key"]

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
