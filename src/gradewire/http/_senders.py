"""How a model client sends one POST, and which way is picked.

At hundreds of calls in flight the client's CPU per request sets the fan-out rate;
`bench/judge_throughput.py` measures these ways side by side (the figures are in the README):

* `FastHttpSender` (stdlib asyncio, `_fast_http.py`): the least CPU per request. The default.
* aiohttp: more CPU per request, so it is not used; httpx over an aiohttp transport
  (httpx-aiohttp) adds httpx's own on top.
* one `httpx.AsyncClient`: its pool's work grows with connections x queued requests, so it
  stalls with hundreds in flight.
* `HttpxPoolSender`: many single-connection httpx clients, each serving one request at a
  time, keep httpx's cost per request flat: the best pure-httpx design measured, used when the
  environment names a proxy (which the fast sender does not speak).
* `HttpxSender`: the caller's own `httpx.AsyncClient`, used as given.

Every sender returns ``(status, headers, body)`` (headers readable by lowercase name) and turns
transport failures (timeouts, refused, reset or dropped connections) into `RetryableError`.
Every sender holds one attempt to one deadline, ``timeout`` (httpx's own timeouts bound each
phase and each read apart), and refuses an answer larger than ``max_response_bytes``, also
once decompressed, with a `ModelHTTPError` that is not retried.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlsplit

from gradewire.core._errors import InvalidInputError
from gradewire.http._fast_http import (
    DEFAULT_MAX_RESPONSE_BYTES,
    FastHttpSender,
    HttpAnswer,
    connection_failure,
    shared_ssl_context,
    timeout_failure,
    too_large_failure,
)

if TYPE_CHECKING:
    import httpx

__all__ = ["HttpxPoolSender", "HttpxSender", "Sender", "default_sender"]

logger = logging.getLogger("gradewire")


class Sender(Protocol):
    """Sends one POST and returns ``(status, headers, body)``; owns its connections."""

    async def post(
        self,
        url: str,
        body: bytes,
        headers: Mapping[str, str],
        timeout: float,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        on_answer: Callable[[], None] | None = None,
    ) -> HttpAnswer:
        """Send one POST.

        ``on_answer`` is called once, as soon as the whole answer is read and before this
        call returns, or not at all when it fails: where the caller frees its concurrency
        slot, so that a call waiting for it can send while this one is still resuming.
        """
        ...

    async def aclose(self) -> None: ...


class HttpxSender:
    """Sends through an `httpx.AsyncClient`: the caller's own (never closed here) or ours."""

    def __init__(self, client: httpx.AsyncClient, *, owned: bool) -> None:
        self._client = client
        self._owned = owned

    async def post(
        self,
        url: str,
        body: bytes,
        headers: Mapping[str, str],
        timeout: float,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        on_answer: Callable[[], None] | None = None,
    ) -> HttpAnswer:
        answer = await _httpx_post(self._client, url, body, headers, timeout, max_response_bytes)
        if on_answer is not None:
            on_answer()
        return answer

    async def aclose(self) -> None:
        if self._owned:
            await self._client.aclose()


class HttpxPoolSender:
    """Pure httpx, with a flat cost per request: a free list of single-connection clients.

    httpx's pool does work proportional to connections x waiting requests on every request,
    so each client here holds one connection and serves one request at a time; the caller's
    concurrency limit bounds how many clients are made.
    """

    def __init__(self, timeout: float) -> None:
        self._timeout = timeout
        self._idle: list[httpx.AsyncClient] = []
        self._all: list[httpx.AsyncClient] = []

    async def post(
        self,
        url: str,
        body: bytes,
        headers: Mapping[str, str],
        timeout: float,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        on_answer: Callable[[], None] | None = None,
    ) -> HttpAnswer:
        client = self._idle.pop() if self._idle else self._new_client()
        try:
            answer = await _httpx_post(client, url, body, headers, timeout, max_response_bytes)
        finally:
            self._idle.append(client)
        if on_answer is not None:
            on_answer()
        return answer

    def _new_client(self) -> httpx.AsyncClient:
        import httpx  # imported when first needed: most runs never take this path

        client = httpx.AsyncClient(
            timeout=self._timeout,
            limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
            verify=shared_ssl_context(),
        )
        self._all.append(client)
        return client

    async def aclose(self) -> None:
        clients, self._all, self._idle = self._all, [], []
        for client in clients:
            await client.aclose()


async def _httpx_post(
    client: httpx.AsyncClient,
    url: str,
    body: bytes,
    headers: Mapping[str, str],
    timeout: float,
    max_bytes: int,
) -> HttpAnswer:
    import httpx  # already imported by whoever made the client

    try:
        # One deadline for the attempt: httpx's timeout bounds each read, not the whole.
        return await asyncio.wait_for(
            _httpx_exchange(client, url, body, headers, timeout, max_bytes), timeout
        )
    except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
        raise InvalidInputError(f"invalid URL {url!r}: {exc}; check base_url") from exc
    except (httpx.TimeoutException, asyncio.TimeoutError) as exc:
        raise timeout_failure(url, timeout) from exc
    except (httpx.TransportError, httpx.DecodingError, OSError) as exc:
        raise connection_failure(url, exc) from exc


async def _httpx_exchange(
    client: httpx.AsyncClient,
    url: str,
    body: bytes,
    headers: Mapping[str, str],
    timeout: float,
    max_bytes: int,
) -> HttpAnswer:
    request = client.build_request("POST", url, content=body, headers=headers, timeout=timeout)
    response = await client.send(request, stream=True)
    try:
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > max_bytes:
            raise too_large_failure(
                url, f"its Content-Length is {declared} bytes", response.status_code, max_bytes
            )
        parts: list[bytes] = []
        size = 0
        # Counted as decoded: httpx inflates each network read whole (at most ~1000 times
        # its size for deflate), so a compression bomb stops within one read of the cap.
        async for part in response.aiter_bytes():
            size += len(part)
            if size > max_bytes:
                raise too_large_failure(
                    url, f"more than {max_bytes} bytes arrived", response.status_code, max_bytes
                )
            parts.append(part)
    finally:
        await response.aclose()
    return response.status_code, response.headers, b"".join(parts)


def environment_proxy(url: str) -> str | None:
    """The proxy the environment (``HTTPS_PROXY``, ``NO_PROXY``...) names for ``url``."""
    import urllib.request  # heavy (http.client, email): only when a model is first used

    parts = urlsplit(url)
    host = parts.hostname
    if not host or urllib.request.proxy_bypass(host):
        return None
    return urllib.request.getproxies().get(parts.scheme) or None


_announced_proxy = False


def default_sender(url: str, timeout: float) -> Sender:
    """The fast sender, or the httpx pool when the environment names a proxy for ``url``."""
    global _announced_proxy
    proxy = environment_proxy(url)
    if proxy is None:
        return FastHttpSender()
    if not _announced_proxy:
        _announced_proxy = True
        logger.info(
            "gradewire: judge calls to %s go through httpx, as the environment names a proxy "
            "for it; without a proxy they take a faster path",
            url,
        )
    return HttpxPoolSender(timeout)
