"""Helpers for the MLflow integration tests: a real tracking server, stores, reading runs back."""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mlflow import MlflowClient
from mlflow.entities import Metric

from gradewire import Table
from gradewire_mlflow._tables import STEP_COLUMN, restore_column

_START_TIMEOUT = 90.0  # seconds; the server needs ~6 s on a quiet machine
_TEMPLATE = """
import sys
from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore
store = SqlAlchemyStore("sqlite:///" + sys.argv[1], "mlflow-artifacts:/")
store.engine.dispose()
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no output)"


class MlflowServer:
    """``mlflow server`` on 127.0.0.1 with a sqlite store and proxied artifacts."""

    def __init__(self, directory: Path, db: Path, port: int | None = None) -> None:
        self.directory = directory
        self.db = db
        self.artifacts = directory / "artifacts"
        self.artifacts.mkdir(parents=True, exist_ok=True)
        self.port = port or _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.stdout = directory / "server.out"
        self.stderr = directory / "server.err"
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def running(self) -> bool:
        """Whether the server process is alive (it may still be starting)."""
        return self._process is not None and self._process.poll() is None

    def start(self) -> None:
        """Start the server and wait until ``/health`` answers; raise with its stderr if not."""
        assert not self.running, "the server is already running"
        env = {
            **os.environ,
            "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",
            "PYTHONUNBUFFERED": "1",  # access log lines reach server.out at once
        }
        command = [
            sys.executable,
            "-m",
            "mlflow",
            "server",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--workers",
            "1",
            "--backend-store-uri",
            f"sqlite:///{self.db}",
            "--artifacts-destination",
            str(self.artifacts),
        ]
        with self.stdout.open("ab") as out, self.stderr.open("ab") as err:
            self._process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                env=env,
                start_new_session=True,  # its own process group, so its workers die with it
            )
        deadline = time.monotonic() + _START_TIMEOUT
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        while True:
            if self._process.poll() is not None:
                code = self._process.returncode
                self._process = None
                raise RuntimeError(
                    f"mlflow server on port {self.port} exited with code {code} while "
                    f"starting; its stderr ends with:\n{_tail(self.stderr)}"
                )
            try:
                with opener.open(f"{self.url}/health", timeout=2) as reply:
                    if reply.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(
                    f"mlflow server on port {self.port} did not answer {self.url}/health "
                    f"within {_START_TIMEOUT:.0f}s; its stderr ends with:\n{_tail(self.stderr)}"
                )
            time.sleep(0.1)

    def kill(self) -> None:
        """Kill the whole process group at once (a crash, as far as clients can tell)."""
        self._signal(signal.SIGKILL, wait=10.0)

    def stop(self) -> None:
        """Stop the process group: SIGTERM, then SIGKILL if it lingers."""
        if not self._signal(signal.SIGTERM, wait=10.0):
            self.kill()

    def _signal(self, sig: signal.Signals, wait: float) -> bool:
        process = self._process
        if process is None:
            return True
        with contextlib.suppress(ProcessLookupError):  # already gone
            os.killpg(process.pid, sig)
        try:
            process.wait(wait)
        except subprocess.TimeoutExpired:
            return False
        self._process = None
        return True

    def requests(self, fragment: str) -> int:
        """How many requests whose line holds ``fragment`` the access log shows so far."""
        return sum(
            fragment in line
            for line in self.stdout.read_text(errors="replace").splitlines()
            if '"' in line
        )


def migrate_template(path: Path) -> None:
    """Create a migrated sqlite tracking database at ``path`` (in a child process)."""
    done = subprocess.run(
        [sys.executable, "-c", _TEMPLATE, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"could not create the MLflow template database:\n{done.stderr}")


def local_store(template_db: Path, directory: Path) -> tuple[str, str]:
    """A fresh local sqlite store in ``directory``: (tracking URI, artifact location)."""
    directory.mkdir(parents=True, exist_ok=True)
    db = directory / "mlflow.db"
    shutil.copyfile(template_db, db)
    return f"sqlite:///{db}", (directory / "artifacts").as_uri()


@dataclass
class RunContents:
    """Everything a run holds, read back through `MlflowClient`.

    Attributes:
        history: metric key -> every stored point, ordered by step then timestamp.
        params: The run's params.
        tags: The run's tags.
        tables: table key -> ``(step, {column: cell})`` rows of its JSON table files, in
            file order, with the table's own column names restored.
        columns: table key -> the columns of its JSON table (step column first).
        html: artifact path -> text of every HTML page.
        files: every artifact path.
        status: The run's status.
    """

    history: dict[str, list[Metric]] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    tables: dict[str, list[tuple[int, dict[str, Any]]]] = field(default_factory=dict)
    columns: dict[str, list[str]] = field(default_factory=dict)
    html: dict[str, str] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    status: str = ""

    def metrics_by_step(self) -> dict[int, dict[str, float]]:
        """step -> key -> value (the last point, if a key has several at one step)."""
        out: dict[int, dict[str, float]] = {}
        for key, points in self.history.items():
            for point in points:
                out.setdefault(point.step, {})[key] = point.value
        return out

    def tables_by_step(self) -> dict[tuple[str, int], Table]:
        """(key, step) -> the table logged then, from the JSON tables, step column dropped."""
        out: dict[tuple[str, int], Table] = {}
        for key, rows in self.tables.items():
            headers = [restore_column(c) for c in self.columns[key][1:]]
            for step, row in rows:
                table = out.setdefault((key, step), Table(initial_headers=headers))
                table.add_row([row[c] for c in self.columns[key][1:]])
        return out


def _files(client: MlflowClient, run_id: str, path: str | None = None) -> Iterator[str]:
    for item in client.list_artifacts(run_id, path):
        if item.is_dir:
            yield from _files(client, run_id, item.path)
        else:
            yield item.path


def _part_number(path: str) -> int:
    name = path.rsplit("/", 1)[-1]
    return 1 if name == "rows.json" else int(name[len("rows-") : -len(".json")])


def read_run(client: MlflowClient, run_id: str, scratch: Path) -> RunContents:
    """What run ``run_id`` holds; artifacts are downloaded under ``scratch``."""
    run = client.get_run(run_id)
    contents = RunContents(
        params=dict(run.data.params), tags=dict(run.data.tags), status=run.info.status
    )
    for key in run.data.metrics:
        points = client.get_metric_history(run_id, key)
        contents.history[key] = sorted(points, key=lambda m: (m.step, m.timestamp))
    contents.files = sorted(_files(client, run_id))
    if not contents.files:
        return contents
    scratch.mkdir(parents=True, exist_ok=True)
    local = Path(client.download_artifacts(run_id, "", str(scratch)))
    tables = sorted(
        (p for p in contents.files if p.startswith("tables/") and p.endswith(".json")),
        key=lambda p: (p.rsplit("/", 1)[0], _part_number(p)),
    )
    for path in tables:
        key = path[len("tables/") :].rsplit("/", 1)[0]
        data = json.loads((local / path).read_text(encoding="utf-8"))
        columns = data["columns"]
        assert columns[0] == STEP_COLUMN, path
        contents.columns[key] = columns  # the last part has every column
        rows = contents.tables.setdefault(key, [])
        for cells in data["data"]:
            assert len(cells) == len(columns), path
            rows.append((cells[0], dict(zip(columns[1:], cells[1:], strict=True))))
    for path in contents.files:
        if path.endswith(".html"):
            contents.html[path] = (local / path).read_text(encoding="utf-8")
    return contents


def is_nan(value: float) -> bool:
    return isinstance(value, float) and math.isnan(value)
