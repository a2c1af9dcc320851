"""Fixtures for the BackgroundSink tests: sinks with tiny delays, closed and joined after."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from background_doubles import FAST, BatchingFlakySink, FlakySink, gradewire_threads

from gradewire import BackgroundSink, SinkError


@pytest.fixture
def make(tmp_path: Path) -> Iterator[Callable[..., BackgroundSink]]:
    """Build BackgroundSinks with tiny delays; close them and check their threads ended."""
    before = gradewire_threads()
    made: list[tuple[BackgroundSink, FlakySink]] = []

    def build(sink: FlakySink, **options: Any) -> BackgroundSink:
        background = BackgroundSink(sink, **{"spill_dir": tmp_path / "spill", **FAST, **options})
        made.append((background, sink))
        return background

    yield build
    for background, sink in made:
        sink.down = False
        sink.down_after = None  # a close deferred while down goes on until delivered
        if sink.gate is not None:
            sink.gate.set()
        with contextlib.suppress(SinkError):  # a test that wanted it to fail checked that
            background.close()
    for thread in gradewire_threads() - before:
        thread.join(10)
        assert not thread.is_alive(), thread.name


@pytest.fixture(params=[FlakySink, BatchingFlakySink], ids=["log", "log_many"])
def sink(request: pytest.FixtureRequest) -> FlakySink:
    sink: FlakySink = request.param()
    return sink
