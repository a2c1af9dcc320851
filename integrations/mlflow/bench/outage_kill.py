"""What a hard kill during an MLflow outage loses, with MLflow's environment at its defaults.

A training process logs a step every ``--interval`` seconds (3 numbers, and a 1-row table
every 20 steps) through ``BackgroundSink(MlflowSink(...))`` to a lean MLflow server on
127.0.0.1. After ``--healthy`` seconds the server is killed; ``--outage`` seconds later,
with the server still down, the training process is SIGKILLed. No ``MLFLOW_HTTP_*``
variable is set, so MLflow's client retries a dead server for about four minutes inside
each call. The script then starts the server again on the same store and counts, for each
variant, in one run:

- steps lost: logged (``log()`` returned) but neither in MLflow nor in the spill files left
  on disk (which ``gradewire.sinks.read_spill`` reads back);
- time to first spill: from the server's death to the first spill file on disk.

Variants: the defaults (``stall_timeout=5``: a call that has not returned after 5 s counts
as an outage, and memory goes to disk), against ``stall_timeout`` out of reach (the worker
waits inside MLflow's retries, as before ``stall_timeout`` existed), and, for reference, the
defaults with ``MLFLOW_HTTP_REQUEST_MAX_RETRIES=1`` and ``MLFLOW_HTTP_REQUEST_TIMEOUT=5``.
``--wait-for-spill S`` keeps the process alive past the outage until the first spill or S
seconds, to measure when the variant without ``stall_timeout`` spills at all.

Run: ``python integrations/mlflow/bench/outage_kill.py`` (about 4 minutes). Needs the full
``mlflow`` (for the server).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from gradewire.sinks import read_spill
from mlflow_support import MlflowServer, migrate_template

TRAINER = r"""
import sys, time
from gradewire import BackgroundSink, Table
from gradewire_mlflow import MlflowSink

url, spill, status, interval, stall = sys.argv[1:6]
sink = BackgroundSink(MlflowSink(tracking_uri=url, experiment_name="outage"),
                      spill_dir=spill, exit_timeout=None, stall_timeout=float(stall))
with open(status, "a", buffering=1) as out:
    step = 0
    while True:
        logs = {"reward/mean": step / 1000, "reward/std": 0.5, "reward/count": step}
        if step % 20 == 0:
            logs["reward/samples"] = Table(initial_headers=["completion", "score"]).add_row(
                [f"answer {step}", 0.5])
        sink.log(logs, step)
        out.write(f"{step}\n")
        step += 1
        time.sleep(float(interval))
"""

VARIANTS = {
    "defaults (stall_timeout=5)": ({}, 5.0),
    "stall_timeout out of reach (the previous behaviour)": ({}, 1e9),
    "defaults + MLFLOW_HTTP_REQUEST_MAX_RETRIES=1, _TIMEOUT=5": (
        {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1", "MLFLOW_HTTP_REQUEST_TIMEOUT": "5"},
        5.0,
    ),
}


def _on_disk(spill: Path) -> set[int]:
    logging.disable(logging.WARNING)  # a line cut by the kill is skipped with a warning
    try:
        paths = sorted(spill.glob("*.jsonl")) if spill.is_dir() else []
        return {step for path in paths for step, _ in read_spill(path)}
    finally:
        logging.disable(logging.NOTSET)


def _spilled(spill: Path) -> bool:
    return spill.is_dir() and any(p.stat().st_size > 0 for p in spill.glob("*.jsonl"))


def run(name: str, env_extra: dict[str, str], stall: float, args: argparse.Namespace) -> dict:
    work = Path(tempfile.mkdtemp(prefix="gradewire-outage-"))
    db = work / "mlflow.db"
    migrate_template(db)
    server = MlflowServer(work / "server", db)
    server.start()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_HTTP_")}
    env.update({"NO_PROXY": "127.0.0.1,localhost", **env_extra})
    spill, status = work / "spill", work / "status.txt"
    command = [sys.executable, "-c", TRAINER, server.url, str(spill), str(status)]
    trainer = subprocess.Popen(
        [*command, str(args.interval), str(stall)], env=env, stderr=subprocess.DEVNULL
    )
    try:
        time.sleep(args.healthy)
        server.kill()
        killed = time.monotonic()
        first_spill = None
        until = killed + max(args.outage, args.wait_for_spill)
        while time.monotonic() < until:
            elapsed = time.monotonic() - killed
            if first_spill is None and _spilled(spill):
                first_spill = elapsed
            if elapsed >= args.outage and (first_spill is not None or not args.wait_for_spill):
                break
            time.sleep(0.05)
        outage = time.monotonic() - killed
    finally:
        trainer.send_signal(signal.SIGKILL)
        trainer.wait()
    logged = [int(line) for line in status.read_text().split()]
    server.start()
    from mlflow import MlflowClient

    client = MlflowClient(server.url)
    experiment = client.get_experiment_by_name("outage")
    runs = client.search_runs([experiment.experiment_id]) if experiment else []
    delivered = {
        int(point.step)
        for found in runs
        for point in client.get_metric_history(found.info.run_id, "reward/count")
    }
    server.stop()
    kept = delivered | _on_disk(spill)
    lost = [step for step in logged if step not in kept]
    return {
        "variant": name,
        "logged": len(logged),
        "delivered": len(delivered),
        "on_disk": len(kept - delivered),
        "lost": len(lost),
        "killed_after_s": round(outage, 1),
        "first_spill_s": None if first_spill is None else round(first_spill, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--healthy", type=float, default=15.0)
    parser.add_argument("--outage", type=float, default=30.0)
    parser.add_argument("--interval", type=float, default=0.2)
    parser.add_argument("--wait-for-spill", type=float, default=0.0)
    args = parser.parse_args()
    print(
        f"server killed after {args.healthy:g} s, training process SIGKILLed "
        f"{args.outage:g} s into the outage; one step every {args.interval:g} s"
    )
    for name, (env_extra, stall) in VARIANTS.items():
        result = run(name, env_extra, stall, args)
        first = result["first_spill_s"]
        spill = f"{first:g} s" if first is not None else f"none in {result['killed_after_s']:g} s"
        print(
            f"{name:58} lost {result['lost']:4} of {result['logged']:4} steps "
            f"(delivered {result['delivered']}, on disk {result['on_disk']}); "
            f"first spill: {spill}"
        )
        print("  " + json.dumps(result))


if __name__ == "__main__":
    main()
