"""MLflow's own retries, left at their defaults, must not keep steps in memory for minutes.

With ``MLFLOW_HTTP_REQUEST_MAX_RETRIES`` unset, MLflow's HTTP client retries a dead server
for about four minutes inside one call. The training process here logs through
``BackgroundSink(MlflowSink(...))`` with MLflow's environment at its defaults; the server
is killed, the process logs on, and then it is SIGKILLed while the server is still down.
Every step it logged must be in MLflow or in the spill files it left: the BackgroundSink
moves what is in memory to disk ``stall_timeout`` (5 s) into the hanging call, instead of
waiting for MLflow to give up. The waits are on conditions, with bounds far from both the
5 s and MLflow's minutes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from mlflow import MlflowClient

from gradewire.sinks import read_spill
from mlflow_support import MlflowServer

HEALTHY = 20  # steps delivered before the server dies
STEPS = 120

_TRAINER = textwrap.dedent(
    """
    import sys
    from gradewire import BackgroundSink, Table
    from gradewire_mlflow import MlflowSink

    url, spill, name, healthy, steps = sys.argv[1:4] + [int(a) for a in sys.argv[4:6]]
    sink = BackgroundSink(MlflowSink(tracking_uri=url, experiment_name="hard-kill",
                                     run_name=name), spill_dir=spill, exit_timeout=None)

    def logs(step):
        table = Table(initial_headers=["completion", "score"]).add_row([f"answer {step}", 0.5])
        out = {"reward/mean": step / steps, "reward/count": step}
        return {**out, "reward/samples": table} if step % 10 == 0 else out

    for step in range(healthy):
        sink.log(logs(step), step)
    assert sink.flush(timeout=60).ok
    print("delivered", flush=True)
    sys.stdin.readline()  # the server is dead now
    for step in range(healthy, steps):
        sink.log(logs(step), step)
    print("logged", flush=True)
    sys.stdin.readline()  # never comes: the process is killed
    """
)


def _on_disk(spill: Path) -> set[int]:
    steps: set[int] = set()
    for path in sorted(spill.glob("*.jsonl")) if spill.is_dir() else []:
        steps.update(step for step, _ in read_spill(path))
    return steps


def _wait_for(condition: object, what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"gave up waiting ({timeout:.0f}s): {what}"
        time.sleep(0.05)


def test_a_hard_kill_during_an_outage_loses_nothing_with_mlflow_retries_at_defaults(
    mlflow_server: MlflowServer, tmp_path: Path
) -> None:
    spill = tmp_path / "spill"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_HTTP_REQUEST")}
    command = [sys.executable, "-c", _TRAINER, mlflow_server.url, str(spill), tmp_path.name]
    with subprocess.Popen(
        [*command, str(HEALTHY), str(STEPS)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    ) as trainer:
        assert trainer.stdin is not None
        assert trainer.stdout is not None
        try:
            assert trainer.stdout.readline() == "delivered\n"
            mlflow_server.kill()
            trainer.stdin.write("go\n")
            trainer.stdin.flush()
            assert trainer.stdout.readline() == "logged\n"  # log() never waited on MLflow
            # Inside MLflow's retries, minutes from giving up, yet every step reaches disk.
            outage = set(range(HEALTHY, STEPS))
            _wait_for(lambda: outage <= _on_disk(spill), "the outage's steps on disk", 60)
        finally:
            trainer.send_signal(signal.SIGKILL)
            if not mlflow_server.running:
                mlflow_server.start()  # the server is shared by the session
    for path in spill.glob("*.jsonl"):  # whole lines only, though the process was killed
        assert all(json.loads(line) for line in path.read_bytes().splitlines())
    client = MlflowClient(mlflow_server.url)
    experiment = client.get_experiment_by_name("hard-kill")
    assert experiment is not None
    (run,) = client.search_runs(
        [experiment.experiment_id], filter_string=f"attributes.run_name = '{tmp_path.name}'"
    )
    history = client.get_metric_history(run.info.run_id, "reward/count")
    delivered = {int(point.step) for point in history}
    assert set(range(HEALTHY)) <= delivered
    assert delivered | _on_disk(spill) == set(range(STEPS))  # nothing lost
