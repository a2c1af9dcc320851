"""A client's sender on each event loop: made on first use there, closed with the loop.

Connections belong to the event loop that opened them, and a client may be used from many
loops (`run_sync` makes a fresh one per call, notebooks and threads have their own). What
every client that POSTs (the model clients, the embeddings client, the endpoint grader)
needs is written here once: one sender per running loop, the fast sender unless the
environment names a proxy or the caller gave its own `httpx.AsyncClient`, closed when the
loop shuts down or at `aclose`, and nothing of it carried by a pickled copy.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import TYPE_CHECKING, Any

from gradewire.http._loop_closer import close_with_loop, forget
from gradewire.http._senders import HttpxSender, Sender, default_sender

if TYPE_CHECKING:
    import httpx

__all__ = ["LoopSenders"]


class LoopSenders:
    """One sender per running event loop for POSTs to ``url`` (see the module docstring).

    Args:
        url: Where the sender POSTs (decides whether a proxy is used).
        attempt_timeout: Seconds one attempt may take (the httpx pool's clients take it).
        http_client: The caller's own client, used on every loop and never closed here.
    """

    __slots__ = ("_client", "_loops", "_timeout", "_url")

    def __init__(
        self, url: str, attempt_timeout: float, http_client: httpx.AsyncClient | None = None
    ) -> None:
        self._url = url
        self._timeout = attempt_timeout
        self._client = http_client
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Sender] = (
            weakref.WeakKeyDictionary()
        )

    async def sender(self) -> Sender:
        """The running loop's sender, made (and registered to close with it) on first use."""
        loop = asyncio.get_running_loop()
        sender = self._loops.get(loop)
        if sender is not None:
            return sender
        if self._client is not None:
            sender = self._loops[loop] = HttpxSender(self._client, owned=False)
            return sender
        sender = self._loops[loop] = default_sender(self._url, self._timeout)
        # Closed by aclose(), or else when the loop shuts down (asyncio.run, run_sync...).
        await close_with_loop(sender)
        return sender

    async def aclose(self) -> None:
        """Close the running loop's sender now (the caller's own client stays open).

        Senders made on other loops close when those loops shut down.
        """
        sender = self._loops.pop(asyncio.get_running_loop(), None)
        if sender is not None and self._client is None:
            forget(sender)
            await sender.aclose()

    def __reduce__(self) -> tuple[Any, ...]:
        # Connections stay behind: the copy opens its own, on its own loops.
        return (LoopSenders, (self._url, self._timeout, self._client))
