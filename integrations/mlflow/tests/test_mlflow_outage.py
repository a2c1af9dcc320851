"""A real outage: the MLflow server is killed mid-run and started again on the same store.

The training loop logs through ``BackgroundSink(MlflowSink(...))``. It must never wait on
the network (every `log()` returns while the server is dead, and MlflowSink only ever runs
on the BackgroundSink's worker thread), and every step must end up in MLflow once, in
order. No wall-clock durations are asserted: the waits are on conditions.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from mlflow import MlflowClient

from gradewire import BackgroundSink, Table
from gradewire.core import LogValue
from gradewire.sinks import StepLogs
from gradewire_mlflow import MlflowSink
from mlflow_support import MlflowServer, read_run

STEPS = 200
KILL_AT = 60
RESTART_AT = 140
TABLE_EVERY = 20


class ThreadRecordingSink(MlflowSink):
    """An MlflowSink that notes the thread each of its methods runs on."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.threads: set[tuple[int, str]] = set()

    def _note(self) -> None:
        thread = threading.current_thread()
        self.threads.add((thread.ident or 0, thread.name))

    def log(self, logs: Mapping[str, LogValue], step: int) -> None:
        self._note()
        super().log(logs, step)

    def log_many(self, entries: Sequence[StepLogs]) -> None:
        self._note()
        super().log_many(entries)

    def log_config(self, config: Mapping[str, Any]) -> None:
        self._note()
        super().log_config(config)

    def close(self) -> None:
        self._note()
        super().close()

    def _write_many(self, entries: list[tuple[int, dict[str, LogValue]]]) -> None:
        self._note()
        super()._write_many(entries)

    def _write_config(self, config: dict[str, Any]) -> None:
        self._note()
        super()._write_config(config)

    def _close(self) -> None:
        self._note()
        super()._close()


def _wait_for(condition: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting: {what}"
        time.sleep(0.01)


def _table(step: int) -> Table:
    table = Table(initial_headers=["Completion", "Score"])
    table.add_row([f"answer {step}", step / STEPS])
    table.add_row([f"other {step}", 1 - step / STEPS])
    return table


def _logs(step: int) -> dict[str, LogValue]:
    logs: dict[str, LogValue] = {
        "reward/mean": step / STEPS,
        "reward/count": step,
        "reward/std": 0.5,
    }
    if step % TABLE_EVERY == 0:
        logs["reward/samples"] = _table(step)
    return logs


def test_a_killed_server_loses_nothing_and_never_blocks_the_loop(
    mlflow_server: MlflowServer, tmp_path: Path
) -> None:
    sink = ThreadRecordingSink(
        tracking_uri=mlflow_server.url, experiment_name="outage", run_name=tmp_path.name
    )
    background = BackgroundSink(
        sink,
        spill_dir=tmp_path / "spill",
        batch_size=20,
        flush_interval=0.01,
        initial_retry_delay=0.05,
        max_retry_delay=0.5,
        close_timeout=60.0,
        exit_timeout=None,
    )
    background.log_config({"grader": "judge", "steps": STEPS})
    logged_while_down: list[int] = []
    try:
        for step in range(STEPS):
            if step == KILL_AT:
                # Mid-run: the config and half the steps so far are in MLflow.
                _wait_for(lambda: background.delivered > KILL_AT // 2, "first deliveries")
                mlflow_server.kill()
            if step == RESTART_AT:
                # The worker has met the outage before the server comes back (~6 s later).
                _wait_for(lambda: not background.is_healthy, "the worker to see the outage")
                mlflow_server.start()
            background.log(_logs(step), step)
            if not mlflow_server.running:
                logged_while_down.append(step)
        report = background.flush(timeout=120.0)
    finally:
        if not mlflow_server.running:
            mlflow_server.start()  # the server is shared by the session
        background.close()

    assert report.ok, report
    assert report.failed_attempts > 0  # the outage was real
    assert report.rejected == 0
    assert background.report is not None
    assert background.report.ok
    assert background.delivered == STEPS + 1  # every step, and the config
    # log() returned for every step while the server was dead.
    assert logged_while_down == list(range(KILL_AT, RESTART_AT))
    # The sink ran on one thread only: the BackgroundSink's worker.
    assert len(sink.threads) == 1, sink.threads
    ((ident, name),) = sink.threads
    assert ident != threading.main_thread().ident
    assert ident != threading.get_ident()
    assert name.startswith("gradewire-"), name

    assert sink.run_id is not None
    run = read_run(MlflowClient(mlflow_server.url), sink.run_id, tmp_path / "readback")
    assert run.status == "FINISHED"
    assert run.params == {"grader": "judge", "steps": str(STEPS)}
    assert sorted(run.history) == ["reward/count", "reward/mean", "reward/std"]
    for key, points in run.history.items():
        # Exactly one point per step: none lost, none doubled by the retries.
        assert [p.step for p in points] == list(range(STEPS)), key
        # Delivered in order: timestamps never go back as the steps go up.
        stamps = [p.timestamp for p in points]
        assert stamps == sorted(stamps), key
    assert [p.value for p in run.history["reward/count"]] == list(range(STEPS))
    table_steps = list(range(0, STEPS, TABLE_EVERY))
    assert sorted(run.html) == [f"tables/reward/samples/step_{s:08d}.html" for s in table_steps]
    assert [step for step, _ in run.tables["reward/samples"]] == [
        s for s in table_steps for _ in range(2)
    ]
    tables = run.tables_by_step()
    assert all(tables[("reward/samples", s)] == _table(s) for s in table_steps)
