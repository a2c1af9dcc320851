"""What a training loop pays for logging through `BackgroundSink`, against calling the sink.

The wrapped sink simulates a tracker with a network round trip of ``--latency-ms`` per
step (``time.sleep`` in `log`; it has no ``log_many``, so nothing is batched away: the
cost only moves off the training thread). For a loop of ``--steps`` steps of ``--metrics``
metrics each, the script prints the time the loop spends:

1. calling the sink directly;
2. inside ``BackgroundSink.log()`` while the tracker is up (then, apart, how long ``close()``
   takes to drain the queue: the network time the loop no longer waits for);
3. inside ``BackgroundSink.log()`` while the tracker is down (the worker retries and spills
   to disk in the background, competing for the GIL);
4. inside ``BackgroundSink.log()`` when memory is full (``max_queue=1``) while the tracker
   hangs: every step waits for the worker to write it to disk (a local JSON append and a
   thread hand-off, never the network: the worst case of ``log()``).

Run: ``python bench/background_sink_overhead.py [--steps 5000] [--metrics 20]
[--latency-ms 2]``. Absolute times drift on a shared machine; compare the ratios.
"""

from __future__ import annotations

import argparse
import logging
import random
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from _results import Alternative, Figure, record
from gradewire.sinks.background._background_sink import BackgroundSink


class SlowTracker:
    """A sink whose every step costs one simulated network round trip."""

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.down = False
        self.gate: threading.Event | None = None
        self.steps = 0

    def log(self, logs: Mapping[str, Any], step: int) -> None:
        if self.gate is not None:
            self.gate.wait()
        time.sleep(self.latency)
        if self.down:
            raise ConnectionError("tracker unreachable")
        self.steps += 1

    def log_config(self, config: Mapping[str, Any]) -> None:
        time.sleep(self.latency)

    def close(self) -> None:
        pass


def payloads(steps: int, metrics: int) -> list[dict[str, float]]:
    rng = random.Random(0)
    names = [
        f"grader_{i // 5}/score/{('mean', 'std', 'min', 'max', 'count')[i % 5]}"
        for i in range(metrics)
    ]
    return [{name: rng.random() for name in names} for _ in range(steps)]


def time_direct(logs: list[dict[str, float]], latency: float) -> float:
    sink = SlowTracker(latency)
    start = time.perf_counter()
    for step, entry in enumerate(logs):
        sink.log(entry, step)
    elapsed = time.perf_counter() - start
    assert sink.steps == len(logs)
    return elapsed


def time_background(
    logs: list[dict[str, float]], latency: float, spill_dir: Path, mode: str
) -> tuple[float, float]:
    """(seconds inside log() for the whole loop, seconds close() took)."""
    sink = SlowTracker(latency)
    options: dict[str, Any] = {"spill_dir": spill_dir, "exit_timeout": None}
    if mode == "down":
        sink.down = True
        options.update(initial_retry_delay=0.01, max_retry_delay=0.05)
    if mode == "queue full":
        sink.gate = threading.Event()  # the worker stays inside its first call
        options.update(max_queue=1)
    background = BackgroundSink(sink, **options)
    start = time.perf_counter()
    for step, entry in enumerate(logs):
        background.log(entry, step)
    in_log = time.perf_counter() - start
    if sink.gate is not None:
        sink.gate.set()
    start = time.perf_counter()
    background.close(timeout=0 if mode == "down" else None)
    closing = time.perf_counter() - start
    report = background.report
    assert report is not None
    if mode == "down":
        assert report.spill_path is not None
        assert report.pending == len(logs)
    else:
        assert report.ok, report
        assert sink.steps == len(logs)
    return in_log, closing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--metrics", type=int, default=20)
    parser.add_argument("--latency-ms", type=float, default=2.0)
    args = parser.parse_args()
    logging.getLogger("gradewire").setLevel(logging.ERROR)  # the outage warnings are expected
    latency = args.latency_ms / 1000
    logs = payloads(args.steps, args.metrics)

    print(f"{args.steps} steps x {args.metrics} metrics, tracker latency {args.latency_ms} ms/step")
    direct = time_direct(logs, latency)
    rows = [("direct sink.log()", direct, None)]
    with tempfile.TemporaryDirectory() as tmp:
        for mode in ("tracker up", "down", "queue full"):
            spill_dir = Path(tmp) / mode.replace(" ", "-")
            in_log, closing = time_background(logs, latency, spill_dir, mode)
            rows.append((f"BackgroundSink.log(), {mode}", in_log, closing))
    for label, seconds, closing in rows:
        per_step = seconds / args.steps * 1e6
        ratio = seconds / direct
        line = f"  {label:34s} {seconds:8.3f} s {per_step:9.1f} us/step {ratio:9.4f} x direct"
        if closing is not None:
            line += f"   (close() then took {closing:.2f} s)"
        print(line)
    record(
        "background_sink_overhead",
        [
            Figure(
                f"time the training loop spent in `log()`, {args.steps:,} steps × "
                f"{args.metrics} metrics, {label.removeprefix('BackgroundSink.log(), ')}",
                seconds / args.steps * 1e6,
                "µs a step",
                alternatives=[Alternative("calling the sink directly", direct / args.steps * 1e6)],
                note=f"tracker latency {args.latency_ms:g} ms a step; "
                f"close() then took {closing:.2f} s",
            )
            for label, seconds, closing in rows
            if closing is not None
        ],
        title="What a training loop pays for logging through `BackgroundSink`",
    )


if __name__ == "__main__":
    main()
