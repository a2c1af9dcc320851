"""Killed during an MLflow outage, and started again: every step reaches MLflow exactly once.

Training processes log through ``BackgroundSink(MlflowSink(run_id=...))`` to a real MLflow
server, which is killed mid-run; the processes are SIGKILLed at random points, while the
server is down and while they replay what the last one left. Each new process of the run
adopts the spill files of the dead ones (same spill directory, same run) and delivers them
first; the watermark keeps what was delivered from being sent again, and the time each step
was logged (its metrics' timestamp) makes the call in flight at a kill idempotent. One
kill is aimed at that call: the process dies right after MLflow accepted it.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest
from mlflow import MlflowClient

from mlflow_support import MlflowServer, read_run
from spill_helpers import Trainer, check_exactly_once, in_mlflow, on_disk


@pytest.mark.parametrize("seed", [7, 8])
def test_trainers_killed_at_random_points_deliver_every_step_once(
    mlflow_server: MlflowServer, tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    client = MlflowClient(mlflow_server.url)
    experiment = client.get_experiment_by_name("adoption")
    experiment_id = experiment.experiment_id if experiment else client.create_experiment("adoption")
    run_id = client.create_run(experiment_id, run_name=tmp_path.name).info.run_id
    spill, url = tmp_path / "spill", mlflow_server.url
    first = Trainer(spill, url, "--run-id", run_id, "--batch", "20")
    try:
        first.log(0, 30)
        assert first.report("flush")["ok"]
        mlflow_server.kill()
        first.log(30, 150)  # log() returns at once although MLflow is down
        time.sleep(rng.uniform(0.0, 2.0))  # the kill lands anywhere in the outage
    finally:
        first.kill()
        mlflow_server.start()
    # What the killed process had not yet put on disk may be lost (documented); the rest
    # is in MLflow or on disk, and must end up in MLflow exactly once.
    expected = in_mlflow(client, run_id) | on_disk(spill)
    assert set(range(30)) <= expected
    resumed = max(expected) + 1

    pending = len(on_disk(spill))
    if pending > 1:
        # Dies right after a call reached MLflow, before it could record it.
        doubt = str(rng.randint(1, pending - 1))
        second = Trainer(spill, url, "--run-id", run_id, "--batch", "10", "--kill-after", doubt)
        assert second.adopted == pending
        second.process.wait(120)
        second.kill()
    third = Trainer(spill, url, "--run-id", run_id, "--batch", "7")
    time.sleep(rng.uniform(0.0, 1.5))  # killed at a random point of its replay
    third.kill()
    last = Trainer(spill, url, "--run-id", run_id, "--batch", "50")
    last.log(resumed, resumed + 10)
    report = last.report("close 120")
    last.kill()
    assert report["ok"], report
    run = read_run(client, run_id, tmp_path / "readback")
    check_exactly_once(run, expected | set(range(resumed, resumed + 10)))
    assert run.status == "RUNNING"  # a run the sinks were given is left to its owner
    assert sorted(p.name for p in spill.iterdir()) == []
