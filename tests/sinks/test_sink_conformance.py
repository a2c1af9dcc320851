"""The sink conformance suite run against every core sink."""

from __future__ import annotations

import io
from pathlib import Path

from gradewire.sinks._console_sink import ConsoleSink
from gradewire.sinks._fanout_sink import FanOutSink
from gradewire.sinks._jsonl_sink import JsonlSink, read_jsonl
from gradewire.sinks._memory_sink import MemorySink
from gradewire.sinks._sink import Sink
from support.sink_conformance import Readback, SinkConformance


class TestMemorySink(SinkConformance):
    def make_sink(self, tmp_path: Path) -> Sink:
        return MemorySink()

    def read_back(self, sink: Sink, tmp_path: Path) -> Readback:
        assert isinstance(sink, MemorySink)
        return Readback.from_steps(sink.steps, sink.config, [sink._repr_html_()])


class TestJsonlSink(SinkConformance):
    def make_sink(self, tmp_path: Path) -> Sink:
        return JsonlSink(tmp_path / "logs" / "run.jsonl")

    def read_back(self, sink: Sink, tmp_path: Path) -> Readback:
        run = read_jsonl(tmp_path / "logs" / "run.jsonl")
        assert run.skipped_lines == []
        return Readback.from_steps(run.steps, run.config)


class TestConsoleSink(SinkConformance):
    """The console prints; what it was given is read from a MemorySink next to it."""

    def make_sink(self, tmp_path: Path) -> Sink:
        return FanOutSink(ConsoleSink(io.StringIO(), show_tables=True), MemorySink())

    def read_back(self, sink: Sink, tmp_path: Path) -> Readback:
        assert isinstance(sink, FanOutSink)
        console, memory = sink.sinks
        assert isinstance(console, ConsoleSink)
        assert isinstance(memory, MemorySink)
        assert isinstance(console.stream, io.StringIO)
        printed = console.stream.getvalue()
        for step, logs in memory.steps:
            assert f"step {step}" in printed
            for key in logs:
                assert key in printed, key
        for key in memory.config:
            assert key in printed, key
        assert sink.errors == [0, 0]
        return Readback.from_steps(memory.steps, memory.config)


class TestFanOutSink(SinkConformance):
    """Read back from the JSONL side, and check the memory side got the same."""

    def make_sink(self, tmp_path: Path) -> Sink:
        return FanOutSink(MemorySink(), JsonlSink(tmp_path / "fan.jsonl"))

    def read_back(self, sink: Sink, tmp_path: Path) -> Readback:
        assert isinstance(sink, FanOutSink)
        memory = sink.sinks[0]
        assert isinstance(memory, MemorySink)
        run = read_jsonl(tmp_path / "fan.jsonl")
        from_file = Readback.from_steps(run.steps, run.config)
        from_memory = Readback.from_steps(memory.steps, memory.config)
        assert from_file.tables == from_memory.tables
        assert from_file.metrics.keys() == from_memory.metrics.keys()
        assert from_file.config == from_memory.config
        assert sink.errors == [0, 0]
        return from_file
