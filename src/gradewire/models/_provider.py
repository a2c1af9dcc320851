"""A provider: what one wire format adds to the client core (encode, decode, error mapping).

The core (`ModelClient`) owns everything that does not depend on the wire format:
connections per event loop, the endpoint's concurrency limit, identical calls in flight sent
once, the judge cache, retries, usage and pickling. A provider says only how its API is
spoken: where a request goes and how it is signed, how a call becomes a request body
(`encode`), how an answer becomes a `ChatCompletion` (`decode`), what an error answer means
(`failure`), which structured-output dialects it speaks, and its defaults. Adding a provider
is one such class, a `ModelClient` subclass that names it, and one line in the registry of
`get_model`.
"""

from __future__ import annotations

import os
import urllib.parse
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from gradewire.core._errors import InvalidInputError, InvalidTypeError
from gradewire.http._retry import ModelHTTPError, RetryableError
from gradewire.models._chat_model import ChatCompletion, ChatMessage
from gradewire.models._dialects import Dialects
from gradewire.models._model_settings import ModelSettings
from gradewire.models._negotiation import WirePlan

__all__ = ["Provider", "check_messages"]


class Provider(ABC):
    """The wire format of one kind of model API (see the module docstring).

    Attributes:
        name: The provider's name in ``get_model("name/model")``.
        dialects: The structured-output dialects its requests can carry.
        logprobs: Whether its answers can carry per-token log probabilities.
        takes: The `ModelSettings` its API takes; a call's others are not sent, and a
            model's own are refused at construction.
        defaults: Settings a request carries when neither the call nor the model sets them
            (an API that requires ``max_tokens``...).
        default_base_url: The API root when neither ``base_url=`` nor the environment names one.
        base_url_env: The environment variable that names the API root.
        api_key_env: The environment variable that holds the API key.
        public_host: The host of the provider's own API, where a call without a key fails.
        headers: Headers every request carries, with or without a key (an API version).
        reserved_body_keys: Request fields ``extra_body`` may not set (the client sets them).
        cache_namespace: Prefixed to a request body to make its cache key, so requests of
            two wire formats never share an answer.
    """

    name: ClassVar[str]
    dialects: ClassVar[Dialects]
    logprobs: ClassVar[bool]
    takes: ClassVar[frozenset[str]] = frozenset({"temperature", "max_tokens"})
    defaults: ClassVar[ModelSettings] = ModelSettings()
    default_base_url: ClassVar[str]
    base_url_env: ClassVar[str]
    api_key_env: ClassVar[str]
    public_host: ClassVar[str | None] = None
    headers: ClassVar[Mapping[str, str]] = {}
    reserved_body_keys: ClassVar[frozenset[str]] = frozenset({"model", "messages", "stream"})
    cache_namespace: ClassVar[bytes] = b""

    def base_url(self, given: str | None) -> str:
        """The API root: ``given``, else the environment's, else the provider's own."""
        url = given if given is not None else os.environ.get(self.base_url_env) or ""
        url = url.strip() or self.default_base_url
        if not url.startswith(("http://", "https://")):
            raise InvalidInputError(
                f"base_url must start with http:// or https://, not {url!r}; e.g. "
                f"{self.example_base_url()!r} for a server on this machine"
            )
        return url.rstrip("/")

    def example_base_url(self) -> str:
        """A base URL of a local server, for error messages."""
        return "http://127.0.0.1:8000"

    def api_key(self, given: str | None) -> str | None:
        """The API key: ``given``, else the environment's (None when neither has one)."""
        return os.environ.get(self.api_key_env) if given is None else given

    def check_key(self, base_url: str, key: str | None, *, base_url_given: bool) -> None:
        """Refuse to call the provider's public API without a key: every call would fail."""
        if (key and key.strip()) or self.public_host is None:
            return
        if urllib.parse.urlsplit(base_url).hostname != self.public_host:
            return
        where = "with this base_url" if base_url_given else f"with no {self.base_url_env} set"
        raise InvalidInputError(
            f"{where} the judge calls go to {self.name}'s public API ({base_url}), and no API "
            f"key is set: set {self.api_key_env} (or pass api_key=), or point "
            f"{self.base_url_env} (or base_url=) at your own server, e.g. "
            f"{self.example_base_url()}"
        )

    def extra_body(self, extra_body: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """``extra_body`` checked: a dict that leaves the client's own fields alone."""
        if extra_body is None:
            return None
        if not isinstance(extra_body, Mapping):
            raise InvalidTypeError(f"extra_body must be a dict, not {type(extra_body).__name__}")
        reserved = sorted(self.reserved_body_keys & set(extra_body))
        if reserved:
            raise InvalidInputError(
                f"extra_body cannot set {reserved}: the client sets model and messages itself "
                "and does not stream; pass the model as the first argument"
            )
        return dict(extra_body)

    @abstractmethod
    def url(self, base_url: str) -> str:
        """Where a chat request is POSTed."""

    @abstractmethod
    def auth_headers(self, key: str) -> dict[str, str]:
        """The headers that carry API key ``key`` (stripped, not empty)."""

    @abstractmethod
    def encode(
        self,
        model: str,
        messages: Sequence[ChatMessage],
        plan: WirePlan,
        *,
        temperature: float | None,
        max_tokens: int | None,
        response_format: Mapping[str, Any] | None,
        logprobs: int | None,
        extra_body: Mapping[str, Any] | None,
    ) -> bytes:
        """The request body of one call, canonical JSON (it keys the cache).

        ``plan`` says the structured-output dialect to spell ``response_format`` (OpenAI's
        JSON-schema form) in, and whether to ask for logprobs.
        """

    @abstractmethod
    def decode(self, body: bytes, requested_model: str, *, what: str, url: str) -> ChatCompletion:
        """A 200 answer read; a body that is not an answer raises `RetryableError`."""

    @abstractmethod
    def failure(
        self,
        status: int,
        headers: Mapping[str, str],
        body: bytes,
        *,
        what: str,
        url: str,
        attempts: int,
    ) -> RetryableError | ModelHTTPError:
        """The error an HTTP error answer stands for: worth a retry (429, 5xx...) or final."""


def check_messages(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    """``messages`` as a list, refusing a bare prompt (a str is a sequence too)."""
    if isinstance(messages, (str, bytes)):
        raise InvalidTypeError(
            "messages must be a list of {'role': ..., 'content': ...} dicts, not a "
            f"{type(messages).__name__}; wrap a prompt as [{{'role': 'user', 'content': text}}]"
        )
    return messages if isinstance(messages, list) else list(messages)
