"""In-flight de-duplication: identical concurrent judge calls share one request."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any

from gradewire.models._chat_model import ChatCompletion

__all__ = ["share_in_flight"]


async def share_in_flight(
    in_flight: dict[str, asyncio.Future[Any]],
    key: str,
    fetch: Callable[[], Awaitable[ChatCompletion]],
) -> ChatCompletion:
    """Run ``fetch()``, unless a call for ``key`` is already in flight: then share its answer.

    Callers that shared get the answer with ``cached=True``. When the shared call fails,
    each of them gets an exception object of its own (see `_own_copy`), chained from the
    original. A follower that is cancelled does not cancel the shared call; when the caller
    that made the request is cancelled, a waiting follower asks again.

    Args:
        in_flight: Request key -> future of the call that is fetching it (the endpoint's,
            on the running loop).
        key: The request's key (the hash of its body).
        fetch: Makes the request, when nobody else is making it.
    """
    while True:
        shared = in_flight.get(key)
        if shared is None:
            break
        try:
            # Shielded: a follower that is cancelled must not cancel the shared call.
            result: ChatCompletion = await asyncio.shield(shared)
        except asyncio.CancelledError:
            if shared.cancelled():
                continue  # the caller that made the request gave up: ask again
            raise
        except Exception as exc:
            # Graders attach per-sample fields to what they catch: one object each.
            raise _own_copy(exc) from exc.__cause__
        return dataclasses.replace(result, cached=True)

    future: asyncio.Future[ChatCompletion] = asyncio.get_running_loop().create_future()
    in_flight[key] = future
    try:
        result = await fetch()
    except Exception as exc:
        # Followers get copies of a pristine copy, made before this caller's grader
        # can tag ``exc``; its cause is ``exc``, which the copies are chained from.
        pristine = _own_copy(exc)
        if pristine is not exc:
            pristine.__cause__ = exc
        future.set_exception(pristine)
        future.exception()  # retrieved: no "never retrieved" log when nobody shared it
        raise
    except BaseException:
        future.cancel()
        raise
    else:
        future.set_result(result)
    finally:
        if in_flight.get(key) is future:
            del in_flight[key]
    return result


def _own_copy(exc: Exception) -> Exception:
    """A new exception of the same type, with the same args and attributes (shallow copies).

    Made without calling ``__init__``, whose signature varies (keyword-only fields...). An
    exception that cannot be copied so is returned as it is.
    """
    cls = type(exc)
    try:
        copy = cls.__new__(cls, *exc.args)
        copy.args = exc.args
        for name, value in vars(exc).items():
            setattr(copy, name, value.copy() if isinstance(value, (dict, list, set)) else value)
    except Exception:  # an extension type without __dict__ or with its own __new__
        return exc
    return copy
