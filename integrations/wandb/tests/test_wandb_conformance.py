"""The sink conformance suite against WandbSink, read back from offline run files."""

from __future__ import annotations

from pathlib import Path

from gradewire.sinks import Sink
from gradewire_wandb import WandbSink, find_offline_runs, read_offline_run
from support.sink_conformance import Readback, SinkConformance


class TestWandbSink(SinkConformance):
    def make_sink(self, tmp_path: Path) -> Sink:
        # dir= explicitly: the standard run is recorded once per class, outside any
        # function-scoped fixture.
        return WandbSink(dir=tmp_path, mode="offline", project="conformance", html=True)

    def read_back(self, sink: Sink, tmp_path: Path) -> Readback:
        assert isinstance(sink, WandbSink)
        assert sink.closed
        assert sink.started_run
        (folder,) = find_offline_runs(tmp_path)
        run = read_offline_run(folder)
        assert run.exit_code == 0, "the sink started the run, so close() finishes it"
        pages = [page for by_step in run.html.values() for page in by_step.values()]
        return Readback.from_steps(run.steps(), run.config, pages)
