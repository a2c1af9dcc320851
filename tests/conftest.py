"""Shared pytest fixtures.

- ``judge_server``: a fresh OpenAI-compatible chat completions server on 127.0.0.1 (see
  ``tests/support/judge_server.py``: scripted replies, a handler, recorded requests, the
  most requests it held at once, fault injection), stopped after the test.
- ``sleeps``: a `RetryPolicy.sleep` that records the waits asked for and returns at once, so
  retry tests assert the delays without waiting for them.
- ``make_judge``: builds an `OpenAIChatModel` pointed at ``judge_server`` (API key
  ``test-key``, retries that never wait, no jitter); keyword arguments override. Its
  connections close when the test's event loop shuts down.
- ``judge_rules``: a `JudgeRules` (``tests/support/judge_scripts.py``) installed as
  ``judge_server``'s handler: ``judge_rules.when("text in the judge prompt", reply)``
  scripts a judge that answers by what it was shown.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from gradewire.http import forget_endpoint_facts
from gradewire.http._retry import RetryPolicy
from gradewire.models._openai_chat import OpenAIChatModel
from support.judge_scripts import JudgeRules
from support.judge_server import JudgeServer


@pytest.fixture
def judge_server() -> Iterator[JudgeServer]:
    with JudgeServer() as server:
        yield server
    # What clients learnt about this server's dialect must not meet the next server that
    # happens to get the same port.
    forget_endpoint_facts()


class RecordingSleep:
    """Records each delay a retry policy asks for, and returns at once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


@pytest.fixture
def sleeps() -> RecordingSleep:
    return RecordingSleep()


@pytest.fixture
def make_judge(judge_server: JudgeServer, sleeps: RecordingSleep) -> Callable[..., OpenAIChatModel]:
    def make(model: str = "judge", **options: Any) -> OpenAIChatModel:
        options.setdefault("base_url", judge_server.base_url)
        options.setdefault("api_key", "test-key")
        options.setdefault("retry", RetryPolicy(sleep=sleeps, random=lambda: 0.0))
        return OpenAIChatModel(model, **options)

    return make


@pytest.fixture
def judge_rules(judge_server: JudgeServer) -> JudgeRules:
    """A `JudgeRules` (tests/support/judge_scripts.py) installed as ``judge_server``'s handler."""
    rules = JudgeRules()
    judge_server.handler = rules
    return rules
