"""``gradewire sync SPILL_DIR``, and runs left RUNNING by a close during an MLflow outage.

The training processes log to MLflow at a URL where no server listens (an outage from the
start), or to the session's real server, killed mid-run. ``gradewire sync`` then delivers
what they left, to the run their files name or to one given by hand, and ends a run whose
sink was closed during the outage with the status and the time of that close.

``gradewire sync`` finds the MLflow sink through the ``spill_target.mlflow`` entry point,
as pyproject.toml declares it (the suite's ``support.declared_integrations`` supplies the
declaration to an editable install made before it).
"""

from __future__ import annotations

import contextlib
import io
import os
import socket
import time
from pathlib import Path
from typing import Any

import pytest
from mlflow import MlflowClient

from gradewire import BackgroundSink
from gradewire.cli import main
from gradewire_mlflow import MlflowSink
from mlflow_support import MlflowServer, read_run
from mlflow_trainer import logs
from spill_helpers import Trainer, check_exactly_once, on_disk
from support.processes import wait_for


@pytest.fixture
def dead_url() -> str:
    """A URL on 127.0.0.1 where nothing listens: MLflow is down from the start."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def sync(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["sync", *args])
    return code, out.getvalue(), err.getvalue()


def run_named(client: MlflowClient, experiment: str, name: str) -> Any:
    found = client.get_experiment_by_name(experiment)
    if found is None:
        return None
    runs = client.search_runs(
        [found.experiment_id], filter_string=f"attributes.run_name = '{name}'"
    )
    return runs[0] if runs else None


def test_sync_refuses_a_folder_that_holds_no_spill_files(tmp_path: Path) -> None:
    code, _, err = sync(str(tmp_path / "nowhere"))
    assert code == 2
    assert "is not a directory" in err
    code, out, _ = sync(str(tmp_path))
    assert code == 0  # empty, as a full delivery leaves it
    assert "nothing left to deliver" in out
    (tmp_path / "notes.txt").write_text("mine")
    code, _, err = sync(str(tmp_path))
    assert code == 2
    assert "holds no gradewire spill files" in err
    (tmp_path / "notes.jsonl").write_text('{"a": 1}\n')
    code, _, err = sync(str(tmp_path))
    assert code == 2
    assert "1 .jsonl files without an owner file" in err


def test_a_run_never_created_is_listed_then_created_and_ended_as_its_close_would_have(
    mlflow_server: MlflowServer, tmp_path: Path, dead_url: str
) -> None:
    spill = tmp_path / "spill"
    trainer = Trainer(spill, dead_url, "--experiment", "sync", "--run-name", tmp_path.name)
    trainer.log(0, 25)
    before = time.time()
    report = trainer.report("close 0.2")  # MLflow is down: the close is deferred, and the
    after = time.time()  # process exits with the entries on disk
    trainer.process.wait(30)
    trainer.kill()
    assert report["deferred_close"]
    assert report["pending"] == 25
    files = sorted(spill.iterdir())

    code, out, _ = sync(str(spill), "--dry-run")
    assert code == 0
    assert "mlflow (run not created yet)" in out
    assert "25 steps (0..24)" in out
    assert "then the close of its sink (ends the run)" in out
    assert "not sent: dry run" in out
    assert sorted(spill.iterdir()) == files  # nothing changed
    client = MlflowClient(mlflow_server.url)
    assert run_named(client, "sync", tmp_path.name) is None  # nothing sent

    code, out, _ = sync(str(spill), "--tracking-uri", mlflow_server.url)
    assert code == 0, out
    assert "delivered 25 of 26 entries; 0 pending, 0 set aside, 0 lost" in out
    run = run_named(client, "sync", tmp_path.name)
    assert run is not None
    contents = read_run(client, run.info.run_id, tmp_path / "readback")
    check_exactly_once(contents, set(range(25)))
    assert contents.status == "FINISHED"
    assert before * 1000 <= run.info.end_time <= after * 1000  # the time of the close
    assert list(spill.iterdir()) == []
    code, out, _ = sync(str(spill))
    assert code == 0  # a second sync: nothing left to deliver
    assert "nothing left to deliver" in out


def test_a_killed_process_is_delivered_into_a_run_given_by_hand(
    mlflow_server: MlflowServer, tmp_path: Path, dead_url: str
) -> None:
    spill = tmp_path / "spill"
    trainer = Trainer(spill, dead_url, "--run-id", "0" * 32)  # a run on a server now gone
    trainer.log(0, 20)
    wait_for(lambda: on_disk(spill) == set(range(20)), "the steps on disk")
    trainer.kill()
    client = MlflowClient(mlflow_server.url)
    experiment_id = client.create_experiment(f"sync-{tmp_path.name}")
    run_id = client.create_run(experiment_id).info.run_id

    # The server the files name is gone (confirmed by hand: only the files name it).
    code, out, err = sync(str(spill), "--timeout", "2", "--trust-target")
    assert code == 1, err
    assert "not all delivered" in out
    assert on_disk(spill) == set(range(20))  # kept for later
    code, out, err = sync(
        str(spill), "--tracking-uri", mlflow_server.url, "--mlflow-run-id", run_id
    )
    assert code == 0, out + err
    contents = read_run(client, run_id, tmp_path / "readback")
    check_exactly_once(contents, set(range(20)))
    assert contents.status == "RUNNING"  # killed, never closed: the run is left as it was
    assert not list(spill.glob("*.jsonl"))


def test_sync_leaves_the_files_of_a_live_process_alone(
    mlflow_server: MlflowServer, tmp_path: Path, dead_url: str
) -> None:
    spill = tmp_path / "spill"
    live = Trainer(spill, dead_url, "--run-id", "1" * 32)
    try:
        live.log(0, 5)
        wait_for(lambda: on_disk(spill) == set(range(5)), "the steps on disk")
        files = sorted(spill.iterdir())
        code, out, _ = sync(str(spill), "--tracking-uri", mlflow_server.url, "--timeout", "5")
        assert code == 0  # nothing it may send
        assert f"held by live process {live.process.pid}" in out
        assert "not sent: held by a live process" in out
        assert sorted(spill.iterdir()) == files
    finally:
        live.kill()


def test_a_run_given_by_hand_is_refused_when_the_folder_holds_several_runs(
    tmp_path: Path, dead_url: str
) -> None:
    spill = tmp_path / "spill"
    for owners, run_id in enumerate(("1" * 32, "2" * 32), start=1):
        trainer = Trainer(spill, dead_url, "--run-id", run_id)
        trainer.log(0, 3)
        wait_for(lambda n=owners: len(list(spill.glob("*.part-*.jsonl"))) == n, "on disk")
        trainer.kill()
    code, _, err = sync(str(spill), "--mlflow-run-id", "3" * 32)
    assert code == 2
    assert "holds the spill files of 2 runs" in err


def test_a_close_during_an_outage_ends_the_run_when_mlflow_returns(
    mlflow_server: MlflowServer, tmp_path: Path
) -> None:
    """Three sinks closed while the server is dead; each run ends once it is back.

    In this process the worker goes on and ends the run itself; of two processes that
    ended, one is delivered by the next process of its run (adoption), one by sync.
    """
    url, client = mlflow_server.url, MlflowClient(mlflow_server.url)
    here = BackgroundSink(
        MlflowSink(tracking_uri=url, experiment_name="closing", run_name=f"{tmp_path.name}-a"),
        spill_dir=tmp_path / "here",
        flush_interval=0.05,
        initial_retry_delay=0.05,
        max_retry_delay=0.5,
        exit_timeout=None,
    )
    adopted = Trainer(tmp_path / "b", url, "--experiment", "closing", "--run-name", "b")
    synced = Trainer(tmp_path / "c", url, "--experiment", "closing", "--run-name", "c")
    for step in range(10):
        here.log(logs(step), step)
    assert here.flush(timeout=60).ok
    for trainer in (adopted, synced):
        trainer.log(0, 10)
        assert trainer.report("flush")["ok"]
    run_b = run_named(client, "closing", "b").info.run_id
    run_c = run_named(client, "closing", "c").info.run_id
    closes: dict[str, tuple[float, float]] = {}
    mlflow_server.kill()
    try:
        for step in range(10, 20):
            here.log(logs(step), step)
        before = time.time()
        here.close(timeout=0.5)  # returns: the close waits for the tracker, not the caller
        closes["a"] = (before, time.time())
        report = here.report
        assert report is not None
        assert report.deferred_close
        assert report.pending == 10
        for name, trainer in (("b", adopted), ("c", synced)):
            trainer.log(10, 20)
            before = time.time()
            assert trainer.report("close 0.5")["deferred_close"]
            closes[name] = (before, time.time())
            trainer.process.wait(30)
            trainer.kill()
    finally:
        mlflow_server.start()

    final = here.flush(timeout=120)  # the worker of this process ends run a
    assert final.ok, final
    run_a = here.wrapped.run_id  # type: ignore[attr-defined]
    resumed = Trainer(tmp_path / "b", url, "--run-id", run_b)  # the next process of run b
    assert resumed.adopted == 11  # 10 steps and the close
    assert resumed.report("close 60")["ok"]
    resumed.kill()
    os.environ["MLFLOW_TRACKING_URI"] = url  # the user names the server the files name
    try:
        code, out, _ = sync(str(tmp_path / "c"))
    finally:
        del os.environ["MLFLOW_TRACKING_URI"]
    assert code == 0, out
    for name, run_id in (("a", run_a), ("b", run_b), ("c", run_c)):
        contents = read_run(client, run_id, tmp_path / f"readback-{name}")
        check_exactly_once(contents, set(range(20)))
        assert contents.status == "FINISHED", name
        end_time = client.get_run(run_id).info.end_time
        assert closes[name][0] * 1000 <= end_time <= closes[name][1] * 1000, name
    assert not (tmp_path / "here").exists()
    assert list((tmp_path / "b").iterdir()) == []
    assert list((tmp_path / "c").iterdir()) == []


class _Listener:
    """An HTTP listener on 127.0.0.1 that records the headers of every request it gets."""

    def __init__(self) -> None:
        import http.server
        import threading

        self.headers: list[dict[str, str]] = []
        seen = self.headers

        class Handler(http.server.BaseHTTPRequestHandler):
            def _record(self) -> None:
                seen.append({k.lower(): v for k, v in self.headers.items()})
                self.send_response(503)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _record

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def listener() -> Any:
    found = _Listener()
    try:
        yield found
    finally:
        found.close()


def _plant(spill: Path, url: str) -> None:
    """Make the owner files of ``spill`` name ``url``, as someone who wrote the folder could."""
    import json

    for owner in spill.glob("*.owner.json"):
        text = owner.read_text()
        state = json.loads(text)
        target = state["target"]
        if isinstance(target.get("run"), dict) and "tracking_uri" in target["run"]:
            target["run"]["tracking_uri"] = url
        target["tracking_uri"] = url
        owner.write_text(json.dumps(state))


def test_sync_sends_no_credentials_to_a_tracking_uri_only_the_folder_names(
    tmp_path: Path, dead_url: str, listener: _Listener, monkeypatch: pytest.MonkeyPatch
) -> None:
    spill = tmp_path / "spill"
    trainer = Trainer(spill, dead_url, "--run-id", "4" * 32)
    trainer.log(0, 5)
    wait_for(lambda: on_disk(spill) == set(range(5)), "the steps on disk")
    trainer.kill()
    _plant(spill, listener.url)
    monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", "secret-token-28")
    files = sorted(spill.iterdir())

    code, out, _ = sync(str(spill), "--dry-run")  # says where each run would go
    assert code == 0
    assert f"to: MLflow at {listener.url}" in out
    assert "--tracking-uri" in out
    assert not listener.headers

    code, out, err = sync(str(spill), "--timeout", "2")
    assert code == 1, out + err
    assert not listener.headers  # nothing at all went there
    assert f"not sent: the spill files name the MLflow server {listener.url}" in out
    assert sorted(spill.iterdir()) == files  # kept for a sync the user confirms

    monkeypatch.setenv("MLFLOW_TRACKING_URI", dead_url)  # the environment names another
    code, out, _ = sync(str(spill), "--timeout", "2")
    assert code == 1
    assert not listener.headers

    # Named by the user (the environment's URI, --tracking-uri, or --trust-target): sent.
    for how in (["--tracking-uri", listener.url], ["--trust-target"], []):
        if not how:
            monkeypatch.setenv("MLFLOW_TRACKING_URI", listener.url + "/")
        listener.headers.clear()
        code, out, _ = sync(str(spill), "--timeout", "2", *how)
        assert code == 1, out  # the listener answers 503: not delivered
        assert listener.headers, how
        assert all(h.get("authorization") == "Bearer secret-token-28" for h in listener.headers)
