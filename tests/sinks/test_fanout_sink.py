from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from gradewire import InvalidInputError, InvalidTypeError, SinkError, Table
from gradewire.core._logging_core import LogValue
from gradewire.sinks._fanout_sink import FanOutSink
from gradewire.sinks._jsonl_sink import JsonlSink, read_jsonl
from gradewire.sinks._memory_sink import MemorySink


class PlainSink:
    """A sink without log_many that fails its close: the minimal protocol, no BaseSink."""

    def __init__(self) -> None:
        self.logged: list[tuple[int, dict[str, LogValue]]] = []

    def log(self, logs: Mapping[str, LogValue], step: int) -> None:
        if step == 13:
            raise ValueError("unlucky step")
        self.logged.append((step, dict(logs)))

    def log_config(self, config: Mapping[str, Any]) -> None:
        pass

    def close(self) -> None:
        raise RuntimeError("cannot close")


def test_every_call_reaches_every_sink(tmp_path: Path) -> None:
    first, second = MemorySink(), MemorySink()
    fan = FanOutSink(first, second, JsonlSink(tmp_path / "run.jsonl"))
    table = Table().add_column("A", [1])
    fan.log_config({"lr": 0.1})
    fan.log({"a": 1.0, "t": table}, 0)
    fan.log_many([(1, {"a": 2.0}), (2, {"a": 3.0})])
    fan.close()
    for memory in (first, second):
        assert memory.metric("a") == [(0, 1.0), (1, 2.0), (2, 3.0)]
        assert memory.table("t") == [(0, table)]
        assert memory.config == {"lr": 0.1}
        assert memory.closed
    assert read_jsonl(tmp_path / "run.jsonl").metric("a") == [(0, 1.0), (1, 2.0), (2, 3.0)]
    assert fan.errors == [0, 0, 0]


def test_each_sink_gets_its_own_dict() -> None:
    class Greedy(MemorySink):
        def _write(self, logs: dict[str, LogValue], step: int) -> None:
            logs["greedy"] = 1.0
            super()._write(logs, step)

    greedy, memory = Greedy(), MemorySink()
    FanOutSink(greedy, memory).log({"a": 1.0}, 0)
    assert memory.steps == [(0, {"a": 1.0})]


def test_a_failing_sink_never_stops_the_others(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    broken = JsonlSink(tmp_path)  # a directory: every write fails for real
    memory = MemorySink()
    fan = FanOutSink(broken, memory)
    with caplog.at_level(logging.DEBUG, logger="gradewire"):
        for step in range(3):
            fan.log({"a": float(step)}, step)
        fan.log_config({"lr": 0.1})
    assert memory.metric("a") == [(0, 0.0), (1, 1.0), (2, 2.0)]
    assert memory.config == {"lr": 0.1}
    assert fan.errors == [4, 0]
    records = [r for r in caplog.records if "sink 0 (JsonlSink) failed" in r.getMessage()]
    assert [r.levelno for r in records] == [logging.WARNING] + [logging.DEBUG] * 3
    assert records[0].exc_info is not None  # the first one carries the traceback
    assert records[1].exc_info is None
    assert "SinkError" in records[0].getMessage()
    assert "(3 failures so far)" in records[2].getMessage()
    fan.close()


def test_a_sink_that_was_closed_behind_the_fan_is_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    early, memory = MemorySink(), MemorySink()
    fan = FanOutSink(early, memory)
    early.close()
    with caplog.at_level(logging.WARNING, logger="gradewire"):
        fan.log({"a": 1.0}, 0)
    assert fan.errors == [1, 0]
    assert memory.metric("a") == [(0, 1.0)]
    assert "is closed" in caplog.text


def test_log_many_falls_back_to_log_per_step_for_sinks_without_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    plain, memory = PlainSink(), MemorySink()
    fan = FanOutSink(plain, memory)
    with caplog.at_level(logging.WARNING, logger="gradewire"):
        fan.log_many([(12, {"a": 1.0}), (13, {"a": 2.0}), (14, {"a": 3.0})])
    assert [step for step, _ in plain.logged] == [12, 14]  # one bad step costs only itself
    assert [step for step, _ in memory.steps] == [12, 13, 14]
    assert fan.errors == [1, 0]
    assert "unlucky step" in caplog.text


def test_bad_input_raises_to_the_caller_and_reaches_no_sink() -> None:
    memory = MemorySink()
    fan = FanOutSink(memory)
    with pytest.raises(InvalidTypeError, match="'x'"):
        fan.log({"x": "text"}, 0)
    fan.log({"a": 1.0}, 5)
    with pytest.raises(InvalidInputError, match="lower"):
        fan.log({"a": 1.0}, 4)
    assert memory.steps == [(5, {"a": 1.0})]
    assert fan.errors == [0]


def test_close_closes_all_then_names_the_failures(caplog: pytest.LogCaptureFixture) -> None:
    first, plain, last = MemorySink(), PlainSink(), MemorySink()
    fan = FanOutSink(first, plain, last)
    with caplog.at_level(logging.WARNING, logger="gradewire"), pytest.raises(SinkError) as info:
        fan.close()
    assert first.closed
    assert last.closed
    message = str(info.value)
    assert "1 of 3 sinks failed to close" in message
    assert "sink 1 (PlainSink): RuntimeError: cannot close" in message
    assert isinstance(info.value.__cause__, RuntimeError)
    assert fan.errors == [0, 1, 0]
    fan.close()  # idempotent: no second error
    with pytest.raises(SinkError, match="closed"):
        fan.log({"a": 1.0}, 0)


def test_only_sinks_are_accepted() -> None:
    with pytest.raises(InvalidTypeError, match="argument 1 is a str"):
        FanOutSink(MemorySink(), "memory")  # type: ignore[arg-type]
    empty = FanOutSink()
    empty.log({"a": 1.0}, 0)
    empty.close()
    assert empty.errors == []


def test_repr() -> None:
    assert repr(FanOutSink(MemorySink())) == "FanOutSink(MemorySink(steps=0, closed=False))"


@pytest.mark.parametrize("wrap", [list, tuple])
def test_a_list_of_sinks_gets_the_call_that_works(wrap: type) -> None:
    sinks = wrap([MemorySink(), MemorySink()])
    with pytest.raises(InvalidTypeError, match=r"FanOutSink\(a, b\).*FanOutSink\(\*sinks\)"):
        FanOutSink(sinks)


def test_an_alert_reaches_the_sinks_that_mark_runs_and_a_failing_one_stops_none(tmp_path):
    class Broken(MemorySink):
        def _write_alert(self, title: str, text: str, tags: dict[str, str]) -> None:
            raise RuntimeError("tracker down")

    first, broken, last = MemorySink(), Broken(), MemorySink()
    fan = FanOutSink(first, broken, JsonlSink(tmp_path / "run.jsonl"), last)
    fan.alert("title", "text", {"k": "v"})
    assert first.alerts == last.alerts == [("title", "text", {"k": "v"})]
    assert fan.errors == [0, 1, 0, 0]
    with pytest.raises(InvalidTypeError, match="tags map str to str"):
        fan.alert("title", "text", {"k": 1})  # type: ignore[dict-item]
    with pytest.raises(InvalidTypeError, match="title must be a str"):
        fan.alert(None, "text", {})  # type: ignore[arg-type]
    assert len(first.alerts) == 1  # refused before anything was sent
    fan.close()
    with pytest.raises(SinkError, match="closed"):
        first.alert("title", "text", {})
