"""A client of an OpenAI-compatible ``/embeddings`` endpoint, for the ``cosine`` metric."""

from __future__ import annotations

import json
import math
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from gradewire.core._errors import ModelCallError
from gradewire.http._fast_http import DEFAULT_MAX_RESPONSE_BYTES
from gradewire.http._loop_senders import LoopSenders
from gradewire.http._retry import RetryPolicy
from gradewire.models._client import attempt_timeout_setting
from gradewire.models._openai_config import base_url_setting
from gradewire.models._openai_wire import failure_for_status

__all__ = ["EmbeddingsClient", "cosine_similarity"]

# Embeddings kept per client: references repeat across samples, and one costs a call.
_REMEMBERED = 4096


def cosine_similarity(a: Sequence[float], b: Sequence[float]) -> float:
    """The cosine of the angle between two vectors (0.0 when either is all zeros)."""
    if len(a) != len(b):
        raise ModelCallError(
            f"the embeddings endpoint gave vectors of {len(a)} and {len(b)} numbers; "
            "cosine needs two of one length"
        )
    dot = math.fsum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b))
    return dot / norm if norm else 0.0


class EmbeddingsClient:
    """Embeds texts with ``POST {base_url}/embeddings`` (retried as judge calls are).

    Args:
        model: The embedding model the server serves.
        base_url: The API root (default ``OPENAI_BASE_URL``, else OpenAI's).
        api_key: Sent as ``Authorization: Bearer ...`` when given.
        attempt_timeout: Seconds one HTTP attempt may take (default 60).
        retry: The retry policy (default: `RetryPolicy()`).
        timeout: The older name of ``attempt_timeout`` (deprecated, with a warning).
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        attempt_timeout: float | None = None,
        retry: RetryPolicy | None = None,
        timeout: float | None = None,
    ) -> None:
        self.model = model
        self.base_url = base_url_setting(base_url)
        self.url = f"{self.base_url}/embeddings"
        self.attempt_timeout = attempt_timeout_setting(attempt_timeout, timeout, "EmbeddingsClient")
        self.retry = retry if retry is not None else RetryPolicy()
        self._headers = {"Content-Type": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key.strip()}"
        self._what = f"embedding model {model!r}"
        self._remembered: OrderedDict[str, tuple[float, ...]] = OrderedDict()
        self._senders = LoopSenders(self.url, self.attempt_timeout)

    async def embed(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        """One vector per text, in order (texts seen before are not sent again)."""
        missing = list(dict.fromkeys(t for t in texts if t not in self._remembered))
        if missing:
            vectors = await self._call(missing)
            for text, vector in zip(missing, vectors, strict=True):
                self._remembered[text] = vector
                if len(self._remembered) > _REMEMBERED:
                    self._remembered.popitem(last=False)
        return [self._remembered[text] for text in texts]

    async def _call(self, texts: list[str]) -> list[tuple[float, ...]]:
        body = json.dumps({"model": self.model, "input": texts}).encode()
        sender = await self._senders.sender()
        attempts = 0

        async def attempt() -> Any:
            nonlocal attempts
            attempts += 1
            status, headers, content = await sender.post(
                self.url, body, self._headers, self.attempt_timeout, DEFAULT_MAX_RESPONSE_BYTES
            )
            if 200 <= status < 300:
                return content
            raise failure_for_status(
                status, headers, content, what=self._what, url=self.url, attempts=attempts
            )

        content = await self.retry.call(attempt, endpoint=self.url, what=self._what)
        return _vectors(content, len(texts), self.url)

    async def aclose(self) -> None:
        """Close this loop's connections (those of other loops close with their loops)."""
        await self._senders.aclose()


def _vectors(content: bytes, count: int, url: str) -> list[tuple[float, ...]]:
    try:
        data = json.loads(content)
        items = sorted(data["data"], key=lambda item: int(item.get("index", 0)))
        vectors = [tuple(float(x) for x in item["embedding"]) for item in items]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ModelCallError(
            f"the embeddings endpoint {url} answered something that is not an embeddings "
            f"list ({type(exc).__name__}: {exc}); check that it serves /embeddings"
        ) from None
    if len(vectors) != count or not all(vectors):
        raise ModelCallError(
            f"the embeddings endpoint {url} gave {len(vectors)} vectors for {count} texts"
        )
    if not all(math.isfinite(x) for vector in vectors for x in vector):
        raise ModelCallError(f"the embeddings endpoint {url} gave a non-finite number")
    return vectors
