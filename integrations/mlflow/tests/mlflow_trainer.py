"""A training process that logs to MLflow through ``BackgroundSink(MlflowSink(...))``.

For the tests that kill it. Run as ``python mlflow_trainer.py SPILL URL [--run-id ID |
--experiment NAME --run-name NAME] [--batch N] [--kill-after N]``; it prints ``adopted N``
once its sink exists, then obeys one command per line on stdin:

- ``log A B``: log steps A..B-1 (a table every 10 steps), then print ``logged``;
- ``flush``: wait until everything is delivered, print ``flushed`` and the report;
- ``close T``: close with a delivery timeout of T seconds, print ``closed`` and the report,
  and exit (with the threads of a deferred close still running, as a script ends).

``--kill-after N``: the process SIGKILLs itself right after the call that brings the steps
MLflow accepted to N, before the sink can record it: the call in doubt at a kill.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gradewire import BackgroundSink, Table
from gradewire.core import LogValue
from gradewire.sinks import StepLogs
from gradewire_mlflow import MlflowSink

TABLE_EVERY = 10


def logs(step: int) -> dict[str, LogValue]:
    """What step ``step`` logs: three numbers, and a table every `TABLE_EVERY` steps."""
    out: dict[str, LogValue] = {"reward/mean": step / 1000, "reward/count": step, "loss": 0.5}
    if step % TABLE_EVERY == 0:
        table = Table(initial_headers=["completion", "score"])
        table.add_row([f"answer {step}", step / 1000]).add_row([f"other {step}", 0.25])
        out["reward/samples"] = table
    return out


class KillingSink(MlflowSink):
    """An MlflowSink that dies right after a call MLflow accepted (see ``--kill-after``)."""

    def __init__(self, kill_after: int | None, **options: Any) -> None:
        super().__init__(**options)
        self.kill_after = kill_after
        self.accepted = 0

    def log_many_at(self, entries: Sequence[StepLogs], times: Sequence[float]) -> None:
        super().log_many_at(entries, times)
        self.accepted += len(entries)
        if self.kill_after is not None and self.accepted >= self.kill_after:
            os.kill(os.getpid(), signal.SIGKILL)


def _report(sink: BackgroundSink, report: Any) -> str:
    return json.dumps(dataclasses.asdict(report), default=str)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("spill", type=Path)
    parser.add_argument("url")
    parser.add_argument("--run-id")
    parser.add_argument("--experiment")
    parser.add_argument("--run-name")
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--kill-after", type=int)
    args = parser.parse_args()
    options: dict[str, Any] = {"tracking_uri": args.url}
    if args.run_id:
        options["run_id"] = args.run_id
    else:
        options.update(experiment_name=args.experiment, run_name=args.run_name)
    sink = BackgroundSink(
        KillingSink(args.kill_after, **options),
        spill_dir=args.spill,
        batch_size=args.batch,
        flush_interval=0.05,
        initial_retry_delay=0.05,
        max_retry_delay=0.5,
        stall_timeout=2.0,
        exit_timeout=None,
    )
    print(f"adopted {sink.flush(timeout=0).adopted}", flush=True)
    for line in sys.stdin:
        command, *rest = line.split()
        if command == "log":
            first, stop = int(rest[0]), int(rest[1])
            for step in range(first, stop):
                sink.log(logs(step), step)
            print("logged", flush=True)
        elif command == "flush":
            report = sink.flush()
            print("flushed " + _report(sink, report), flush=True)
        elif command == "close":
            sink.close(timeout=float(rest[0]))
            print("closed " + _report(sink, sink.report), flush=True)
            return


if __name__ == "__main__":
    main()
