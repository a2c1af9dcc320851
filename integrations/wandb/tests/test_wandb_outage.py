"""W&B outages: a killed process's spill adopted by the next one, and ``gradewire sync``.

The fault is real: the test kills the training process's ``wandb-core`` (W&B's service),
after which its W&B calls raise and the BackgroundSink keeps the steps on disk; then the
process is killed too, or closes its sink. What it left reaches the same run (same project
and id, resumed) once each, read back from the offline run files.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import psutil
import pytest

from gradewire.cli import main
from gradewire.sinks import read_spill
from gradewire_wandb import find_offline_runs, read_offline_run
from support.processes import SpillChild, child_env, wait_for
from wandb_trainer import make_sink

TRAINER = Path(__file__).with_name("wandb_trainer.py")


class Trainer(SpillChild):
    """A `wandb_trainer.py` process with a W&B service of its own."""

    def __init__(self, spill: Path, directory: Path, run_id: str) -> None:
        command = [sys.executable, str(TRAINER), str(spill), str(directory), run_id]
        env = child_env(TRAINER.parent, drop=["WANDB_SERVICE"])  # its service, not ours
        super().__init__(command, env, "trainer")

    def report(self, command: str) -> dict[str, Any]:
        word, _, text = self.ask(command).partition(" ")
        assert word in ("flushed", "closed"), word
        result: dict[str, Any] = json.loads(text)
        return result

    def kill_wandb_service(self) -> None:
        """Kill W&B's service of this process, as the OOM killer might."""
        children = psutil.Process(self.process.pid).children(recursive=True)
        services = [child for child in children if child.name() == "wandb-core"]
        assert services, [child.name() for child in children]
        for service in services:
            service.kill()
        # Dead once a zombie (this trainer reaps it): only then are its sockets closed. A
        # step sent before that is written into a dying service, which is W&B's loss and
        # counted as delivered, not one the sink could have kept.
        wait_for(lambda: all(dead(service) for service in services), "the W&B service to die")


@pytest.fixture
def trainers() -> Iterator[list[Trainer]]:
    started: list[Trainer] = []
    yield started
    for trainer in started:
        trainer.kill()


def dead(process: psutil.Process) -> bool:
    try:
        return process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def on_disk(spill: Path) -> list[int]:
    return sorted(step for path in spill.glob("*.jsonl") for step, _ in read_spill(path))


def folders_of(directory: Path, run_id: str) -> list[Path]:
    """The offline folders of ``run_id``: one per process that logged to it, oldest first."""
    return [path for path in find_offline_runs(directory) if path.name.endswith(f"-{run_id}")]


def past_the_second_of_its_folder(directory: Path, run_id: str) -> None:
    """Wait until the clock has left the second that names the run's offline folder.

    W&B names an offline folder by the second its process started it
    (``offline-run-YYYYMMDD_HHMMSS-<id>``): a second process of the same run started within
    that second writes into the same folder, and the folders of the two could not be told
    apart. A restart takes longer than that in real life; on a fast machine a test does not.
    """
    [folder] = folders_of(directory, run_id)
    started = folder.name.split("-")[2]
    while datetime.now().strftime("%Y%m%d_%H%M%S") <= started:
        time.sleep(0.05)


def steps_in(folder: Path) -> list[tuple[int, float]]:
    """Every (step, x) an offline run folder holds, each time it is there."""
    out: list[tuple[int, float]] = []
    for step, values in read_offline_run(folder, partial=True).steps():
        x = values["x"]
        assert isinstance(x, float)
        out.append((step, x))
    return out


def check_killed_run(folder: Path) -> None:
    """The folder of the process whose service was killed holds only steps it delivered.

    W&B's service writes its run file in blocks: what it had not written when it was
    killed is W&B's own loss (steps BackgroundSink saw delivered), so only its content
    is checked, not its length.
    """
    steps = steps_in(folder)
    assert len(set(steps)) == len(steps)
    assert set(steps) <= {(step, float(step)) for step in range(10)}


def sync(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["sync", *args])
    return code, out.getvalue(), err.getvalue()


def killed_service_then(tmp_path: Path, trainers: list[Trainer]) -> tuple[Trainer, Path, Path, str]:
    """A trainer delivers steps 0..9, loses its W&B service, and keeps steps 10..19 on disk."""
    spill, directory, run_id = tmp_path / "spill", tmp_path / "wandb-dir", uuid.uuid4().hex[:8]
    trainer = Trainer(spill, directory, run_id)
    trainers.append(trainer)
    assert trainer.adopted == 0
    assert trainer.ask("log 0 10") == "logged"
    assert trainer.report("flush")["ok"]
    trainer.kill_wandb_service()
    assert trainer.ask("log 10 20") == "logged"
    wait_for(lambda: on_disk(spill) == list(range(10, 20)), "the steps on disk")
    return trainer, spill, directory, run_id


def test_the_next_process_of_the_run_delivers_what_a_killed_one_left(
    tmp_path: Path, trainers: list[Trainer]
) -> None:
    trainer, spill, directory, run_id = killed_service_then(tmp_path, trainers)
    trainer.kill()  # SIGKILL: its sink never closed
    past_the_second_of_its_folder(directory, run_id)
    sink = make_sink(spill, directory, run_id)  # the restarted training, same run
    for step in range(20, 25):
        sink.log({"x": float(step)}, step)
    sink.close(timeout=60)
    report = sink.report
    assert report is not None
    assert report.ok, report
    assert report.adopted == 10
    assert report.delivered == 15
    killed, resumed = folders_of(directory, run_id)  # one folder per process
    check_killed_run(killed)
    assert read_offline_run(resumed).exit_code == 0  # finished by this sink's close
    assert steps_in(resumed) == [(step, float(step)) for step in range(10, 25)]
    assert list(spill.iterdir()) == []


def test_sync_delivers_what_a_process_closed_during_the_outage_left(
    tmp_path: Path, trainers: list[Trainer]
) -> None:
    trainer, spill, directory, run_id = killed_service_then(tmp_path, trainers)
    report = trainer.report("close 0.2")
    assert report["deferred_close"]
    assert report["pending"] == 10
    trainer.process.wait(60)
    trainer.kill()

    code, out, _ = sync(str(spill), "--dry-run")
    assert code == 0, out
    assert f"wandb run (id={run_id}, project=outages)" in out
    assert "10 steps (10..19), then the close of its sink (ends the run)" in out
    assert len(folders_of(directory, run_id)) == 1  # nothing sent

    past_the_second_of_its_folder(directory, run_id)
    code, out, err = sync(str(spill))
    assert code == 0, out + err
    assert "delivered 10 of 11 entries; 0 pending, 0 set aside, 0 lost" in out
    killed, synced = folders_of(directory, run_id)
    check_killed_run(killed)
    assert read_offline_run(synced).exit_code == 0  # the run is finished, as the close would have
    assert steps_in(synced) == [(step, float(step)) for step in range(10, 20)]
    assert list(spill.iterdir()) == []
    code, out, err = sync(str(spill), "--mlflow-run-id", "0" * 32)
    assert code == 2  # nothing left, and a run given by hand is MLflow's only
