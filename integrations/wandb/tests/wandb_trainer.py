"""A training process for the W&B outage tests: a BackgroundSink over an offline WandbSink.

Run as ``python wandb_trainer.py SPILL DIR RUN_ID``. It prints ``adopted N`` once its sink
exists, then reads commands from stdin, one a line, and answers each:

- ``log FIRST STOP``: log steps FIRST..STOP-1 (``x`` = the step); answers ``logged``;
- ``flush``: wait until everything is delivered; answers ``flushed`` and the report;
- ``close SECONDS``: close within SECONDS; answers ``closed`` and the report, then exits.

The W&B fault the tests cause is real: they kill this process's ``wandb-core`` (W&B's
service, as the OOM killer may), after which every W&B call raises.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

from gradewire import BackgroundSink
from gradewire_wandb import WandbSink


def make_sink(spill: Path, directory: Path, run_id: str) -> BackgroundSink:
    """The sink the trainer logs with; a test makes the same one for the same run."""
    wandb_sink = WandbSink(
        project="outages", dir=directory, mode="offline", init_kwargs={"id": run_id}
    )
    return BackgroundSink(
        wandb_sink,
        spill_dir=spill,
        flush_interval=0.02,
        initial_retry_delay=0.02,
        max_retry_delay=0.1,
        exit_timeout=None,
    )


def main() -> None:
    spill, directory, run_id = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    sink = make_sink(spill, directory, run_id)
    print(f"adopted {sink.flush(timeout=0).adopted}", flush=True)
    for line in sys.stdin:
        command, *args = line.split()
        if command == "log":
            for step in range(int(args[0]), int(args[1])):
                sink.log({"x": float(step)}, step)
            print("logged", flush=True)
        elif command == "flush":
            report = sink.flush(timeout=60)
            print("flushed " + json.dumps(dataclasses.asdict(report), default=str), flush=True)
        elif command == "close":
            sink.close(timeout=float(args[0]))
            report = sink.report
            assert report is not None
            print("closed " + json.dumps(dataclasses.asdict(report), default=str), flush=True)
            return


if __name__ == "__main__":
    main()
