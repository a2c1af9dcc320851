"""MlflowSink against a real tracking server: keys, batches, params, runs, tables, escaping."""

from __future__ import annotations

import importlib.util
import logging
import math
import uuid
from pathlib import Path

import mlflow
import pytest
from mlflow import MlflowClient

from gradewire import BackgroundSink, InvalidInputError, MissingDependencyError, SinkError, Table
from gradewire_mlflow import MlflowSink
from gradewire_mlflow._keys import is_valid_key
from mlflow_support import MlflowServer, local_store, read_run

SCRIPT = "<script>alert(1)</script>"
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"


def _name() -> str:
    return f"test-{uuid.uuid4().hex[:12]}"


def _sink(server: MlflowServer, **options: object) -> MlflowSink:
    options.setdefault("experiment_name", "sink-tests")
    options.setdefault("run_name", _name())
    return MlflowSink(tracking_uri=server.url, **options)  # type: ignore[arg-type]


def _samples(step: int, rows: int = 2) -> Table:
    table = Table(initial_headers=["Prompt", "Completion", "Score"])
    for i in range(rows):
        table.add_row([f"prompt {step}.{i}", f"{SCRIPT} answer {step}.{i}", i / max(rows, 1)])
    return table


def _warnings(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and text in r.getMessage()
    ]


def test_keys_are_cleaned_and_no_two_become_one(
    mlflow_server: MlflowServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    logs = {
        "a b!": 1.0,
        "a b?": 2.0,
        "a b_": 3.0,  # valid, but "a b!" was cleaned to it first
        "/lead/and/trail/": 4.0,
        "double//slash": 5.0,
        "../up": 6.0,
        "dot/./segment": 7.0,
        "k" * 300: 8.0,
        "ok/key:1 - fine.": 9.0,
        "line\nbreak": 10.0,
        "..hidden": 11.0,
    }
    sink = _sink(mlflow_server)
    with caplog.at_level(logging.WARNING, logger="gradewire"):
        sink.log(logs, 1)
        first = len(caplog.records)
        sink.log(logs, 2)
        assert len(caplog.records) == first  # warned once per key, not per step
    sink.close()
    assert sink.run_id is not None
    run = read_run(MlflowClient(mlflow_server.url), sink.run_id, tmp_path)
    stored = {key: [p.value for p in points] for key, points in run.history.items()}
    assert len(stored) == len(logs)  # nothing collapsed
    assert sorted(v[0] for v in stored.values()) == sorted(logs.values())
    assert all(len(v) == 2 for v in stored.values())  # the same name at both steps
    assert all(is_valid_key(key) for key in stored)
    assert stored["ok/key:1 - fine."] == [9.0, 9.0]  # a valid key is kept as it is
    assert stored["a b_"] == [1.0, 1.0]
    assert "lead/and/trail" in stored
    assert "double/slash" in stored
    assert max(len(key) for key in stored) == 250
    changed = _warnings(caplog, "is not a valid MLflow name")
    assert len(changed) == len(logs) - 2  # all but "a b_" and the valid one
    assert len(_warnings(caplog, "would both be logged as")) == 2  # "a b?" and "a b_"


def test_2500_metrics_in_one_step_go_in_three_requests(mlflow_server: MlflowServer) -> None:
    sink = _sink(mlflow_server)
    sink.log({"warm-up": 0.0}, 0)  # starts the run
    before = mlflow_server.requests("/runs/log-batch")
    sink.log({f"many/{i:04d}": float(i) for i in range(2500)}, 1)
    after = mlflow_server.requests("/runs/log-batch")
    sink.close()
    assert after - before == 3
    assert sink.run_id is not None
    metrics = MlflowClient(mlflow_server.url).get_run(sink.run_id).data.metrics
    assert len(metrics) == 2501
    assert all(metrics[f"many/{i:04d}"] == i for i in range(2500))


def test_log_many_sends_many_steps_per_request(mlflow_server: MlflowServer) -> None:
    sink = _sink(mlflow_server)
    sink.log({"warm-up": 0.0}, 0)
    before = mlflow_server.requests("/runs/log-batch")
    sink.log_many([(step, {"a": step, "b": -step}) for step in range(1, 301)])
    after = mlflow_server.requests("/runs/log-batch")
    sink.close()
    assert after - before == 1  # 600 metrics of 300 steps in one request
    assert sink.run_id is not None
    history = MlflowClient(mlflow_server.url).get_metric_history(sink.run_id, "b")
    assert sorted((m.step, m.value) for m in history) == [(s, -float(s)) for s in range(1, 301)]


def test_nan_and_inf_are_stored_as_mlflow_keeps_them(
    mlflow_server: MlflowServer, tmp_path: Path
) -> None:
    sink = _sink(mlflow_server)
    sink.log({"nan": math.nan, "pinf": math.inf, "ninf": -math.inf, "big": 10**400}, 1)
    sink.close()
    assert sink.run_id is not None
    run = read_run(MlflowClient(mlflow_server.url), sink.run_id, tmp_path)
    values = {key: points[0].value for key, points in run.history.items()}
    assert math.isnan(values["nan"])
    assert values["pinf"] == 1.7976931348623157e308  # the SQL store's stand-in for inf
    assert values["ninf"] == -1.7976931348623157e308
    assert values["big"] == 1.7976931348623157e308  # an int beyond float range is inf


def test_long_param_is_cut_with_a_warning_and_kept_whole(
    mlflow_server: MlflowServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    long = "x" * 6500 + "END"
    sink = _sink(mlflow_server)
    with caplog.at_level(logging.WARNING, logger="gradewire"):
        sink.log_config({"prompt": long, "model": {"name": "judge", "temperature": 0.0}})
    sink.close()
    assert sink.run_id is not None
    run = read_run(MlflowClient(mlflow_server.url), sink.run_id, tmp_path / "run")
    assert run.params["prompt"] == long[:6000]
    assert run.params["model/name"] == "judge"  # nested mappings are flattened
    assert run.params["model/temperature"] == "0.0"
    assert len(_warnings(caplog, "6000")) == 1
    assert "params/prompt.txt" in run.files
    local = MlflowClient(mlflow_server.url).download_artifacts(
        sink.run_id, "params/prompt.txt", str(tmp_path / "file")
    )
    assert Path(local).read_text(encoding="utf-8") == long


def test_a_changed_param_keeps_its_first_value_and_tags_the_new_one(
    mlflow_server: MlflowServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sink = _sink(mlflow_server)
    with caplog.at_level(logging.WARNING, logger="gradewire"):
        sink.log_config({"lr": 0.1, "batch": 8})
        sink.log_config({"lr": 0.1})  # the same value again: nothing to say
        assert not _warnings(caplog, "changed")
        sink.log_config({"lr": 0.2})
        sink.log_config({"lr": 0.3})
    sink.close()
    assert sink.run_id is not None
    run = read_run(MlflowClient(mlflow_server.url), sink.run_id, tmp_path)
    assert run.params == {"lr": "0.1", "batch": "8"}
    assert run.tags["gradewire.param/lr"] == "0.3"
    assert len(_warnings(caplog, "MLflow params cannot change")) == 1


def test_the_active_run_is_used_and_left_open(
    mlflow_server: MlflowServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_server.url)
    client = MlflowClient(mlflow_server.url)
    experiment = client.get_experiment_by_name("active-run")
    experiment_id = (
        client.create_experiment("active-run") if experiment is None else experiment.experiment_id
    )
    with mlflow.start_run(experiment_id=experiment_id) as run:
        # Made here, used from the BackgroundSink's worker thread, where MLflow's
        # (thread-local) active run is not visible.
        sink = BackgroundSink(MlflowSink(), flush_interval=0.01, exit_timeout=None)
        sink.log({"reward/mean": 0.5}, 1)
        sink.log_config({"grader": "judge"})
        sink.close()
        assert sink.report is not None
        assert sink.report.ok
        wrapped = sink.wrapped
        assert isinstance(wrapped, MlflowSink)
        assert wrapped.run_id == run.info.run_id
        assert not wrapped.owns_run
        assert wrapped.tracking_uri == mlflow_server.url
        assert client.get_run(run.info.run_id).info.status == "RUNNING"
    stored = client.get_run(run.info.run_id)
    assert stored.info.status == "FINISHED"  # ended by mlflow.start_run's block, not the sink
    assert stored.data.metrics == {"reward/mean": 0.5}
    assert stored.data.params == {"grader": "judge"}


def test_a_given_run_is_not_ended_and_a_failure_marks_an_own_run(
    mlflow_server: MlflowServer,
) -> None:
    client = MlflowClient(mlflow_server.url)
    experiment_id = client.create_experiment(_name())
    given = client.create_run(experiment_id).info.run_id
    sink = MlflowSink(tracking_uri=mlflow_server.url, run_id=given, tags={"team": "rl"})
    sink.log({"x": 1.0}, 1)
    sink.close()
    assert client.get_run(given).info.status == "RUNNING"
    assert client.get_run(given).data.tags["team"] == "rl"

    name = _name()
    own = _sink(mlflow_server, tags={"team": "rl"}, run_name=name)

    def fail_in_block() -> None:
        with own:
            own.log({"x": 1.0}, 1)
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        fail_in_block()
    assert own.run_id is not None
    stored = client.get_run(own.run_id)
    assert stored.info.status == "FAILED"
    assert stored.data.tags["team"] == "rl"
    assert stored.data.tags["mlflow.runName"] == name


def test_a_deleted_run_is_refused_as_invalid_input(mlflow_server: MlflowServer) -> None:
    client = MlflowClient(mlflow_server.url)
    run_id = client.create_run(client.create_experiment(_name())).info.run_id
    client.delete_run(run_id)
    sink = MlflowSink(tracking_uri=mlflow_server.url, run_id=run_id)
    with pytest.raises(InvalidInputError, match="refused"):
        sink.log({"x": 1.0}, 1)
    sink.close()


def test_rank_other_than_zero_writes_nothing(
    mlflow_server: MlflowServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RANK", "1")
    name = _name()
    sink = MlflowSink(tracking_uri=mlflow_server.url, experiment_name=name)
    assert not sink.active
    background = BackgroundSink(sink, exit_timeout=None)
    background.log_config({"lr": 0.1})
    background.log({"x": 1.0, "t": _samples(1)}, 1)
    background.close()
    sink.close()
    assert sink.run_id is None
    assert MlflowClient(mlflow_server.url).get_experiment_by_name(name) is None
    assert MlflowSink(tracking_uri=mlflow_server.url, all_ranks=True).active


def test_every_html_page_is_escaped(mlflow_server: MlflowServer, tmp_path: Path) -> None:
    sink = BackgroundSink(_sink(mlflow_server), flush_interval=0.01, exit_timeout=None)
    for step in range(6):
        table = _samples(step)
        table.add_column(f"<b>{step}</b>", ["<img src=x onerror=alert(2)>", "&"])
        sink.log({"judge/samples": table, "judge/score/mean": 0.5}, step)
    sink.close()
    wrapped = sink.wrapped
    assert isinstance(wrapped, MlflowSink)
    assert wrapped.run_id is not None
    run = read_run(MlflowClient(mlflow_server.url), wrapped.run_id, tmp_path)
    assert sorted(run.html) == [f"tables/judge/samples/step_{s:08d}.html" for s in range(6)]
    for path, page in run.html.items():
        assert "<script" not in page.lower(), path
        assert "<img" not in page.lower(), path
        assert "<b>" not in page, path
        assert page.count(ESCAPED) == 2, path
        assert "&lt;img src=x onerror=alert(2)&gt;" in page, path
    # The JSON table keeps the text as it was: it is data, escaped wherever it is shown.
    completions = [row["Completion"] for _, row in run.tables["judge/samples"]]
    assert len(completions) == 12
    assert all(c.startswith(SCRIPT) for c in completions)


def test_one_appending_table_per_key_that_load_table_reads(
    mlflow_server: MlflowServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 120 table steps: past the ~100 files after which one log_table file per step breaks
    # the run's mlflow.loggedArtifacts tag.
    sink = _sink(mlflow_server)
    sink.log_many([(step, {"judge/samples": _samples(step)}) for step in range(120)])
    sink.log({"other": _samples(0, rows=1)}, 120)
    sink.close()
    assert sink.run_id is not None
    client = MlflowClient(mlflow_server.url)
    run = read_run(client, sink.run_id, tmp_path)
    assert run.tags["mlflow.loggedArtifacts"] == (
        '[{"path": "tables/judge/samples/rows.json", "type": "table"}, '
        '{"path": "tables/other/rows.json", "type": "table"}]'
    )
    assert [f for f in run.files if f.endswith(".json")] == [
        "tables/judge/samples/rows.json",
        "tables/other/rows.json",
    ]
    assert sink.experiment_id is not None
    # MlflowClient.load_table searches runs through the fluent API's tracking URI.
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_server.url)
    frame = client.load_table(sink.experiment_id, "tables/judge/samples/rows.json", [sink.run_id])
    assert list(frame.columns) == ["step", "Prompt", "Completion", "Score"]
    assert frame["step"].tolist() == [s for s in range(120) for _ in range(2)]
    assert frame["Prompt"].tolist()[-1] == "prompt 119.1"
    tables = run.tables_by_step()
    for step in range(120):
        assert tables[("judge/samples", step)] == _samples(step)


def test_a_long_table_continues_in_numbered_files(
    mlflow_server: MlflowServer, tmp_path: Path
) -> None:
    sink = _sink(mlflow_server, table_rows_per_file=5)
    for step in range(4):
        sink.log({"t": _samples(step, rows=3)}, step)
    sink.close()
    assert sink.run_id is not None
    run = read_run(MlflowClient(mlflow_server.url), sink.run_id, tmp_path)
    assert [f for f in run.files if f.endswith(".json")] == [
        "tables/t/rows-0002.json",
        "tables/t/rows-0003.json",
        "tables/t/rows.json",
    ]
    assert [step for step, _ in run.tables["t"]] == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]
    tables = run.tables_by_step()
    assert all(tables[("t", step)] == _samples(step, rows=3) for step in range(4))
    listed = run.tags["mlflow.loggedArtifacts"]
    assert all(f'"tables/t/{name}"' in listed for name in ("rows.json", "rows-0002.json"))


def test_tables_keep_columns_and_repeat_steps(
    mlflow_server: MlflowServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    first = Table(initial_headers=["step", "Score"]).add_row([7, 0.5])
    second = Table(initial_headers=["step", "Score", "Note"]).add_row([8, math.inf, "new"])
    sink = _sink(mlflow_server, table_policy=None)
    with caplog.at_level(logging.WARNING, logger="gradewire"):
        sink.log({"t": first}, 3)
        sink.log({"t": second}, 3)  # the same step again: a second page, more rows
    sink.close()
    assert sink.run_id is not None
    run = read_run(MlflowClient(mlflow_server.url), sink.run_id, tmp_path)
    assert sorted(run.html) == ["tables/t/step_00000003-2.html", "tables/t/step_00000003.html"]
    assert run.columns["t"] == ["step", "step_", "Score", "Note"]
    assert run.tables["t"] == [
        (3, {"step_": 7, "Score": 0.5, "Note": None}),
        (3, {"step_": 8, "Score": None, "Note": "new"}),  # JSON has no inf: null, as pandas
    ]
    assert len(_warnings(caplog, "step column")) == 1


def test_local_store_without_a_server(template_db: Path, tmp_path: Path) -> None:
    uri, artifacts = local_store(template_db, tmp_path / "store")
    sink = MlflowSink(tracking_uri=uri, experiment_name="local", artifact_location=artifacts)
    sink.log({"a": 1.0, "t": _samples(1)}, 1)
    sink.close()
    assert sink.run_id is not None
    run = read_run(MlflowClient(uri), sink.run_id, tmp_path / "read")
    assert run.status == "FINISHED"
    assert run.history["a"][0].value == 1.0
    assert (tmp_path / "store" / "artifacts").is_dir()
    assert "tables/t/step_00000001.html" in run.html


def test_a_new_experiment_on_sqlite_keeps_its_artifacts_beside_the_database(
    template_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # MLflow's own default is ./mlruns of the folder the process runs in.
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    uri, _ = local_store(template_db, tmp_path / "store")
    sink = MlflowSink(tracking_uri=uri, experiment_name="beside")
    sink.log({"a": 1.0, "t": _samples(1)}, 1)
    sink.close()
    assert list(elsewhere.iterdir()) == []
    experiment = MlflowClient(uri).get_experiment_by_name("beside")
    assert experiment.artifact_location == (tmp_path / "store" / "mlartifacts").as_uri()
    assert sink.run_id is not None
    run = read_run(MlflowClient(uri), sink.run_id, tmp_path / "read")
    assert "tables/t/step_00000001.html" in run.html


def test_default_tracking_uri(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    sink = MlflowSink()
    assert sink.tracking_uri == f"sqlite:///{tmp_path}/mlflow.db"
    sink.close()
    assert list(tmp_path.iterdir()) == []  # nothing logged, nothing created
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:9")
    assert MlflowSink().tracking_uri == "http://127.0.0.1:9"
    assert MlflowSink(tracking_uri="http://127.0.0.1:8").tracking_uri == "http://127.0.0.1:8"


def test_arguments_are_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InvalidInputError, match="run_id"):
        MlflowSink(run_id="abc", experiment_name="x")
    with pytest.raises(InvalidInputError, match="table_rows_per_file"):
        MlflowSink(table_rows_per_file=0)
    with pytest.raises(TypeError, match="tags"):
        MlflowSink(tags=["a"])  # type: ignore[arg-type]
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "mlflow" else real(name, *a)
    )
    with pytest.raises(MissingDependencyError, match="pip install"):
        MlflowSink()


def test_a_failed_write_can_be_repeated_without_doubling_anything(
    mlflow_server: MlflowServer, tmp_path: Path
) -> None:
    # A real partial failure: the metrics request succeeds, then the server cannot store
    # the HTML page, because a file sits where the run's "tables" folder must go.
    sink = _sink(mlflow_server)
    sink.log({"m": 0.0}, 0)
    assert sink.run_id is not None
    assert sink.experiment_id is not None
    blocker = mlflow_server.artifacts / sink.experiment_id / sink.run_id / "artifacts" / "tables"
    blocker.parent.mkdir(parents=True, exist_ok=True)
    blocker.write_text("in the way")
    logs = {"m": 1.0, "t": _samples(1)}
    with pytest.raises(SinkError, match="could not log 1 step"):
        sink.log(logs, 1)
    client = MlflowClient(mlflow_server.url)
    assert [p.step for p in client.get_metric_history(sink.run_id, "m")] == [0, 1]
    blocker.unlink()
    sink.log(logs, 1)  # the same call again, as BackgroundSink repeats it
    sink.close()
    run = read_run(client, sink.run_id, tmp_path)
    assert [(p.step, p.value) for p in run.history["m"]] == [(0, 0.0), (1, 1.0)]
    assert sorted(run.html) == ["tables/t/step_00000001.html"]
    assert [step for step, _ in run.tables["t"]] == [1, 1]
