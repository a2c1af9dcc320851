"""One chat request to a model server, any provider's: cache, concurrency limit, retries.

An error answer that names a field the request carried is a `ParameterRefusedError`, raised
at once whatever its status (llama-cpp-python refuses fields with a 500): the caller may
drop or rephrase the field, and a retry would only get the same answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gradewire.http._endpoint_state import Ticket
from gradewire.http._failure import server_message
from gradewire.http._loop_resources import LoopResources
from gradewire.http._refusal import ParameterRefusedError, refused_parameter
from gradewire.http._retry import RetryPolicy
from gradewire.models._cache_io import cache_get, cache_put
from gradewire.models._chat_model import ChatCompletion
from gradewire.models._judge_cache import JudgeCache
from gradewire.models._provider import Provider

__all__ = ["Target", "fetch"]


@dataclass(frozen=True)
class Target:
    """Where and how a client sends: the settings `fetch` needs."""

    provider: Provider
    model: str
    url: str
    headers: Mapping[str, str]
    attempt_timeout: float
    max_response_bytes: int
    retry: RetryPolicy
    cache: JudgeCache | None
    what: str


async def fetch(
    target: Target,
    resources: LoopResources,
    key: str,
    body: bytes,
    parameters: Sequence[str],
    staged: Ticket | None = None,
) -> ChatCompletion:
    """The answer to request ``body`` (cache key ``key``), from the cache or the server.

    Args:
        target: The client's settings.
        resources: The client's sender and the endpoint's limit on this loop.
        key: The request's cache key.
        body: The encoded request.
        parameters: Fields of the request a refusal may name, most specific first.
        staged: The call's place among those waiting for a slot, given back once it has one.
    """
    cache = target.cache
    if cache is not None:
        hit = await cache_get(cache, key)
        if hit is not None:
            return hit
    call = _Call(target, resources, body, parameters, staged)
    result = await target.retry.call(call.attempt, endpoint=target.url, what=target.what)
    if cache is not None:
        await cache_put(cache, key, result)
    return result


class _Call:
    """One request's attempts.

    An object rather than closures: it is alive while the server thinks, and one object is
    less for the garbage collector to trace than a function and its cells (see `_http11`).
    """

    __slots__ = (
        "attempts",
        "body",
        "held",
        "limiter",
        "parameters",
        "sender",
        "staged",
        "target",
    )

    def __init__(
        self,
        target: Target,
        resources: LoopResources,
        body: bytes,
        parameters: Sequence[str],
        staged: Ticket | None,
    ) -> None:
        self.target = target
        self.sender = resources.sender
        self.limiter = resources.state.limiter
        self.body = body
        self.parameters = parameters
        self.staged = staged
        self.attempts = 0
        self.held = False

    def free(self) -> None:
        # The slot goes to the next waiting call as soon as the answer is read (the sender
        # calls this then), not when this call resumes to parse it.
        if self.held:
            self.held = False
            self.limiter.release()

    async def attempt(self) -> ChatCompletion:
        target = self.target
        self.attempts += 1
        if not self.limiter.try_acquire():
            await self.limiter.acquire()
        self.held = True
        if self.staged is not None:
            self.staged.release()
            self.staged = None
        try:
            status, headers, content = await self.sender.post(
                target.url,
                self.body,
                target.headers,
                target.attempt_timeout,
                target.max_response_bytes,
                self.free,
            )
        finally:
            self.free()
        if 200 <= status < 300:
            return target.provider.decode(content, target.model, what=target.what, url=target.url)
        parameter = refused_parameter(status, content, self.parameters)
        if parameter is not None:
            said = server_message(content)
            raise ParameterRefusedError(
                f"{target.what} at {target.url} refused the request parameter {parameter!r} "
                f"with HTTP {status}: {said}",
                endpoint=target.url,
                parameter=parameter,
                status=status,
                attempts=self.attempts,
                server_message=said,
            )
        raise target.provider.failure(
            status, headers, content, what=target.what, url=target.url, attempts=self.attempts
        )
