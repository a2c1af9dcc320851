"""The sink conformance suite against MLflow: a real server, a local store, in the background."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mlflow import MlflowClient

from gradewire import Histogram
from gradewire.sinks import Sink
from gradewire.sinks.background._background_sink import BackgroundSink
from gradewire_mlflow import MlflowSink
from mlflow_support import MlflowServer, local_store, read_run
from support.sink_conformance import Readback, SinkConformance

FAST: dict[str, Any] = {
    "flush_interval": 0.01,
    "initial_retry_delay": 0.05,
    "max_retry_delay": 0.5,
    "exit_timeout": None,
}


def _readback(sink: MlflowSink, scratch: Path) -> Readback:
    assert sink.run_id is not None
    contents = read_run(MlflowClient(sink.tracking_uri), sink.run_id, scratch)
    assert contents.status == "FINISHED"
    readback = Readback(config=dict(contents.params), html=list(contents.html.values()))
    readback.metrics = contents.metrics_by_step()
    readback.tables = contents.tables_by_step()
    # A histogram is stored as the table of its bins, with no HTML page.
    for where, table in list(readback.tables.items()):
        if table.headers == ["bin_start", "bin_end", "count"]:
            del readback.tables[where]
            rows = [row for row in table.rows if row[0] is not None and row[1] is not None]
            edges = (*(float(r[0]) for r in rows), float(rows[-1][1]))
            readback.histograms[where] = Histogram(edges, tuple(int(r[2]) for r in rows))
    # Every table step has its HTML page too.
    for key, step in readback.tables:
        assert f"tables/{key}/step_{step:08d}.html" in contents.html
    return readback


class TestMlflowSinkOnServer(SinkConformance):
    server: MlflowServer

    @pytest.fixture(autouse=True)
    def _server(self, mlflow_server: MlflowServer) -> None:
        self.server = mlflow_server

    def make_sink(self, tmp_path: Path) -> Sink:
        return MlflowSink(
            tracking_uri=self.server.url, experiment_name="conformance", run_name=tmp_path.name
        )

    def read_back(self, sink: Sink, tmp_path: Path) -> Readback:
        assert isinstance(sink, MlflowSink)
        return _readback(sink, tmp_path / "readback")


class TestMlflowSinkOnLocalStore(SinkConformance):
    template: Path

    @pytest.fixture(autouse=True)
    def _template(self, template_db: Path) -> None:
        self.template = template_db

    def make_sink(self, tmp_path: Path) -> Sink:
        uri, artifacts = local_store(self.template, tmp_path / "store")
        return MlflowSink(
            tracking_uri=uri, experiment_name="conformance", artifact_location=artifacts
        )

    def read_back(self, sink: Sink, tmp_path: Path) -> Readback:
        assert isinstance(sink, MlflowSink)
        return _readback(sink, tmp_path / "readback")


class TestBackgroundMlflowSink(SinkConformance):
    """MlflowSink behind a BackgroundSink: the same stored result, delivered by its worker."""

    server: MlflowServer

    @pytest.fixture(autouse=True)
    def _server(self, mlflow_server: MlflowServer) -> None:
        self.server = mlflow_server

    def make_sink(self, tmp_path: Path) -> Sink:
        sink = MlflowSink(
            tracking_uri=self.server.url, experiment_name="conformance-bg", run_name=tmp_path.name
        )
        return BackgroundSink(sink, spill_dir=tmp_path / "spill", **FAST)

    def read_back(self, sink: Sink, tmp_path: Path) -> Readback:
        assert isinstance(sink, BackgroundSink)
        assert sink.report is not None
        wrapped = sink.wrapped
        assert isinstance(wrapped, MlflowSink)
        return _readback(wrapped, tmp_path / "readback")
