"""Calls past max_concurrency: they wait before building their request, and give their place on.

A model handed many calls at once keeps ``max_concurrency`` in flight and at most as many more
built and waiting for a slot; the rest wait before building anything (see `EndpointState`).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from gradewire.http._endpoint_state import endpoint_state
from gradewire.http._fast_http import FastHttpSender
from gradewire.models._openai_wire import OpenAIProvider
from support.judge_server import chat


def ask(i: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"question {i}"}]


class BuiltRequests:
    """Counts the requests a model has built and not yet sent (and lists them as built)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.unsent = 0
        self.most = 0
        self.built: list[str] = []
        body, post = OpenAIProvider.encode, FastHttpSender.post

        def counted_body(provider: OpenAIProvider, *args: Any, **options: Any) -> bytes:
            self.unsent += 1
            self.most = max(self.most, self.unsent)
            self.built.append(args[1][0]["content"])  # (model, messages, plan)
            return body(provider, *args, **options)

        async def counted_post(sender: FastHttpSender, *args: Any) -> Any:
            self.unsent -= 1
            return await post(sender, *args)

        monkeypatch.setattr(OpenAIProvider, "encode", counted_body)
        monkeypatch.setattr(FastHttpSender, "post", counted_post)


async def test_a_model_handed_many_calls_builds_at_most_its_limit_ahead(
    judge_server, make_judge, monkeypatch
):
    judge_server.handler = lambda request: chat(request.json["messages"][0]["content"], delay=0.02)
    built = BuiltRequests(monkeypatch)
    model = make_judge(max_concurrency=3)
    answers = await asyncio.gather(*(model.complete(ask(i)) for i in range(60)))
    assert [a.text for a in answers] == [f"question {i}" for i in range(60)]
    assert judge_server.max_in_flight == 3
    assert built.most == 3  # built and waiting for a slot: 3 at most, not 57
    assert built.built == [f"question {i}" for i in range(60)]  # first come, first built


async def test_a_call_sharing_another_calls_answer_gives_its_place_on(
    judge_server, make_judge, monkeypatch
):
    # One slot, one place to wait in. The copies of the first question share its call: they
    # wait for its answer, not for a slot, so the second question is built and waiting for
    # the slot while the first is still out.
    # The answer's delay is the margin between the server seeing the first question and it
    # possibly seeing the second: a loaded machine may take a while to deliver the first.
    judge_server.handler = lambda request: chat("PASS", delay=1.0)
    built = BuiltRequests(monkeypatch)
    model = make_judge(max_concurrency=1)
    calls = [asyncio.ensure_future(model.complete(ask(0))) for _ in range(4)]
    calls.append(asyncio.ensure_future(model.complete(ask(1))))
    while len(built.built) < 5 or not judge_server.chat_requests:
        await asyncio.sleep(0.01)
    assert len(judge_server.chat_requests) == 1  # only the first question is out
    answers = await asyncio.gather(*calls)
    assert [a.cached for a in answers] == [False, True, True, True, False]
    assert len(judge_server.chat_requests) == 2


async def test_calls_cancelled_while_waiting_leave_no_place_taken(judge_server, make_judge):
    judge_server.handler = lambda request: chat("PASS", delay=0.05)
    model = make_judge(max_concurrency=2)
    calls = [asyncio.ensure_future(model.complete(ask(i))) for i in range(12)]
    await asyncio.sleep(0.01)
    for call in calls[1::2]:  # in flight, built and waiting, and not yet built
        call.cancel()
    done = await asyncio.gather(*calls, return_exceptions=True)
    assert [isinstance(d, asyncio.CancelledError) for d in done] == [False, True] * 6
    state = endpoint_state(asyncio.get_running_loop(), model._endpoint_key, 2)
    assert (state.limiter.active, state.staging.active) == (0, 0)
    while judge_server.in_flight:  # the server still sleeps on the cancelled calls
        await asyncio.sleep(0.01)
    judge_server.max_in_flight = 0
    answers = await asyncio.gather(*(model.complete(ask(100 + i)) for i in range(6)))
    assert [a.text for a in answers] == ["PASS"] * 6
    assert judge_server.max_in_flight == 2
