"""LoopSenders: one sender per event loop, closed with it or at aclose, never pickled.

The sender factory is patched on the module object `LoopSenders` was imported from, not by
its dotted name: a test that purges ``gradewire`` from ``sys.modules`` leaves the name
pointing at a fresh copy of the module, which the class here never reads.
"""

from __future__ import annotations

import asyncio
import pickle

from gradewire.http import _loop_senders as loop_senders
from gradewire.http._fast_http import FastHttpSender
from gradewire.http._loop_senders import LoopSenders
from gradewire.openai._embeddings import EmbeddingsClient


class Recorded(FastHttpSender):
    closed = 0

    async def aclose(self) -> None:
        Recorded.closed += 1
        await super().aclose()


def test_each_loop_has_its_own_sender_closed_when_the_loop_shuts_down(monkeypatch):
    monkeypatch.setattr(loop_senders, "default_sender", lambda url, t: Recorded())
    senders = LoopSenders("http://127.0.0.1:1/v1/x", 5.0)
    Recorded.closed = 0

    async def twice() -> tuple[object, object]:
        return await senders.sender(), await senders.sender()

    first, again = asyncio.run(twice())
    assert first is again  # one per loop
    assert Recorded.closed == 1  # asyncio.run's shutdown closed it
    second, _ = asyncio.run(twice())
    assert second is not first
    assert Recorded.closed == 2


def test_aclose_closes_this_loops_sender_once(monkeypatch):
    monkeypatch.setattr(loop_senders, "default_sender", lambda url, t: Recorded())
    senders = LoopSenders("http://127.0.0.1:1/v1/x", 5.0)
    Recorded.closed = 0

    async def use_and_close() -> None:
        await senders.sender()
        await senders.aclose()
        await senders.aclose()  # nothing left to close

    asyncio.run(use_and_close())
    assert Recorded.closed == 1  # not closed again at the loop's shutdown


def test_a_pickled_copy_starts_without_connections():
    senders = LoopSenders("http://127.0.0.1:1/v1/x", 5.0)

    async def use() -> None:
        await senders.sender()
        copy = pickle.loads(pickle.dumps(senders))
        assert len(copy._loops) == 0

    asyncio.run(use())


def test_an_embeddings_client_that_was_used_can_be_pickled():
    client = EmbeddingsClient("e", base_url="http://127.0.0.1:1/v1", attempt_timeout=4)

    async def use() -> EmbeddingsClient:
        await client._senders.sender()
        copy: EmbeddingsClient = pickle.loads(pickle.dumps(client))
        return copy

    copy = asyncio.run(use())
    assert (copy.url, copy.attempt_timeout) == (client.url, 4.0)
