"""Judge cache reads and writes that never fail a call: a broken cache only logs."""

from __future__ import annotations

import logging
import sqlite3

from gradewire.http._endpoint_facts import endpoint_facts, learn_endpoint_facts
from gradewire.models._chat_model import ChatCompletion
from gradewire.models._dialects import OPENAI_DIALECTS, Dialects
from gradewire.models._judge_cache import JudgeCache
from gradewire.models._negotiation import stored_facts

__all__ = ["cache_get", "cache_put", "load_facts", "store_facts"]

logger = logging.getLogger("gradewire")


async def cache_get(cache: JudgeCache, key: str) -> ChatCompletion | None:
    """The cached answer for ``key``, or None when there is none or the cache is unreadable."""
    try:
        return await cache.get(key)
    except (sqlite3.Error, OSError) as exc:
        logger.warning("gradewire: judge cache %s unreadable (%s); calling the model", cache, exc)
    except UnicodeError as exc:  # defensive: the cache stores and reads any str
        _warn_once("read", cache, f"gradewire: judge cache {cache} unreadable ({exc})")
    return None


async def cache_put(cache: JudgeCache, key: str, completion: ChatCompletion) -> None:
    """Store ``completion`` under ``key``; a failure is logged, never raised."""
    # The answer is returned whatever happens here: it was paid for.
    try:
        await cache.put(key, completion)
    except (sqlite3.Error, OSError) as exc:
        logger.warning("gradewire: could not store a judge answer in %s (%s)", cache, exc)
    except UnicodeError as exc:  # defensive: the cache stores and reads any str
        _warn_once("write", cache, f"gradewire: could not store a judge answer in {cache} ({exc})")


_warned: set[tuple[str, str]] = set()


def _warn_once(what: str, cache: JudgeCache, message: str) -> None:
    """Warn the first time per cache and kind: a failure on every call would flood the log."""
    key = (what, cache.path)
    if key not in _warned:
        _warned.add(key)
        logger.warning("%s (said once per cache)", message)


async def load_facts(
    cache: JudgeCache, endpoint: str, dialects: Dialects = OPENAI_DIALECTS
) -> None:
    """Take what ``cache`` stored about ``endpoint``, unless the process knows it already."""
    if endpoint_facts(endpoint):
        return
    try:
        stored = stored_facts(await cache.endpoint_facts(endpoint), dialects)
    except (sqlite3.Error, OSError, UnicodeError) as exc:
        logger.warning("gradewire: judge cache %s unreadable (%s)", cache, exc)
        return
    if stored:
        learn_endpoint_facts(endpoint, stored)


async def store_facts(cache: JudgeCache, endpoint: str) -> None:
    """Store what the process learnt about ``endpoint`` in ``cache``; failures only log."""
    try:
        await cache.store_endpoint_facts(endpoint, dict(endpoint_facts(endpoint)))
    except (sqlite3.Error, OSError, UnicodeError) as exc:
        logger.warning("gradewire: could not store endpoint facts in %s (%s)", cache, exc)
