"""What WandbSink adds per step over a bare ``run.log``, in one offline W&B run.

Both sides log to the same run, alternating step by step so that machine noise hits
them alike: the bare side builds the ``run.log`` payload by hand (a dict of numbers, a
``wandb.Table`` from the rows), the sink side passes grader logs to `WandbSink.log`.
Prints milliseconds per step and the ratio sink / bare.

Usage: python integrations/wandb/bench/sink_overhead.py [--steps 400] [--table-steps 40]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable

from gradewire import Table
from gradewire_wandb import WandbSink

NUMBERS = {
    "judge/score/mean": 0.5,
    "judge/score/std": 0.25,
    "judge/score/min": 0.0,
    "judge/score/max": 1.0,
    "judge/score/count": 32,
    "judge/score/abstained_count": 0,
    "judge/score/error_count": 1,
}


def make_table(rows: int) -> Table:
    table = Table(initial_headers=["Prompt", "Completion", "Reasoning", "Score"])
    for i in range(rows):
        table.add_row([f"prompt {i} " * 8, f"completion {i} " * 40, f"because {i} " * 20, i / rows])
    return table


Step = Callable[[int], None]


def measure(steps: int, bare: Step, sink: Step) -> tuple[float, float]:
    bare_times: list[float] = []
    sink_times: list[float] = []
    for i in range(steps):
        start = time.perf_counter()
        bare(i)
        bare_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        sink(i)
        sink_times.append(time.perf_counter() - start)
    return statistics.median(bare_times) * 1e3, statistics.median(sink_times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--table-steps", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gradewire-wandb-bench-") as folder:
        for name in ("WANDB_DIR", "WANDB_DATA_DIR", "WANDB_CACHE_DIR", "WANDB_CONFIG_DIR"):
            os.environ[name] = folder
        os.environ.update(WANDB_SILENT="true", WANDB_CONSOLE="off", WANDB_X_DISABLE_STATS="true")
        start = time.perf_counter()
        import wandb

        imported = time.perf_counter() - start
        run = wandb.init(dir=folder, mode="offline", project="bench")
        started = time.perf_counter() - start - imported
        print(f"import wandb {imported:.2f} s, wandb.init (offline, cold) {started:.2f} s")

        step = 0

        def next_step() -> int:
            nonlocal step
            step += 1
            return step

        plain = WandbSink(run=run, prefix="rewards")
        paged = WandbSink(run=run, prefix="paged", html=True)
        table = make_table(50)
        rows, headers = table.rows, table.headers
        print(f"{'what':<34}{'bare ms':>9}{'sink ms':>9}{'ratio':>7}")
        cases: list[tuple[str, int, Step, Step]] = [
            (
                "7 numbers",
                args.steps,
                lambda i: run.log(
                    {f"rewards/{k}": v for k, v in NUMBERS.items()}, step=next_step()
                ),
                lambda i: plain.log(NUMBERS, next_step()),
            ),
            (
                "7 numbers + 50-row table",
                args.table_steps,
                lambda i: run.log(
                    {
                        **{f"rewards/{k}": v for k, v in NUMBERS.items()},
                        "rewards/judge/samples": wandb.Table(columns=headers, data=rows),
                    },
                    step=next_step(),
                ),
                lambda i: plain.log({**NUMBERS, "judge/samples": table}, next_step()),
            ),
            (
                "same, sink adds the html page",
                args.table_steps,
                lambda i: run.log(
                    {
                        **{f"paged/{k}": v for k, v in NUMBERS.items()},
                        "paged/judge/samples": wandb.Table(columns=headers, data=rows),
                    },
                    step=next_step(),
                ),
                lambda i: paged.log({**NUMBERS, "judge/samples": table}, next_step()),
            ),
        ]
        for what, n, bare, sink in cases:
            bare_ms, sink_ms = measure(n, bare, sink)
            print(f"{what:<34}{bare_ms:>9.3f}{sink_ms:>9.3f}{sink_ms / bare_ms:>7.2f}")
        run.finish()
        wandb.teardown()


if __name__ == "__main__":
    main()
