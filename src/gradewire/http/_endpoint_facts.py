"""What the process has learnt about each endpoint (which request fields it takes).

Learnt once, from a refusal, and kept for the life of the process, so every later call to the
endpoint, from any client object and any event loop, is built right the first time: looking
it up is one dict read. The judge cache file keeps a copy across processes.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

__all__ = ["endpoint_facts", "forget_endpoint_facts", "learn_endpoint_facts"]

_facts: dict[str, dict[str, Any]] = {}
_lock = threading.Lock()
_EMPTY: Mapping[str, Any] = {}


def endpoint_facts(key: str) -> Mapping[str, Any]:
    """The facts learnt about endpoint ``key`` ({} when none)."""
    return _facts.get(key, _EMPTY)


def learn_endpoint_facts(key: str, facts: Mapping[str, Any]) -> dict[str, Any]:
    """Record ``facts`` about endpoint ``key`` (merged into what is known); returns them all."""
    with _lock:
        known = dict(_facts.get(key, _EMPTY))
        known.update(facts)
        _facts[key] = known  # replaced whole: readers never see a dict being changed
        return dict(known)


def forget_endpoint_facts(key: str | None = None) -> None:
    """Forget what was learnt about ``key`` (every endpoint when None): a server changed."""
    with _lock:
        if key is None:
            _facts.clear()
        else:
            _facts.pop(key, None)
