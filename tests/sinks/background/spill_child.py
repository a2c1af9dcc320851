"""A training process for the adoption tests: logs to a `FileTracker` through a BackgroundSink.

Run as ``python spill_child.py SPILL TRACKER RUN FIRST STOP [--batch N] [--kill-after N]
[--then wait|close|flush]``. It prints ``adopted N`` once its sink exists (N: the entries it
took over from earlier processes of the run), logs steps FIRST..STOP-1 (``x`` = the step),
prints ``logged``, then waits for stdin to close (``wait``: the test kills it), or closes
the sink within 0.05 s and exits (``close``), or flushes until everything is delivered and
closes (``flush``), printing ``done`` and the report as JSON.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from background_doubles import FileTracker

from gradewire import BackgroundSink


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("spill", type=Path)
    parser.add_argument("tracker", type=Path)
    parser.add_argument("run")
    parser.add_argument("first", type=int)
    parser.add_argument("stop", type=int)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--kill-after", type=int, default=None)
    parser.add_argument("--then", choices=["wait", "close", "flush"], default="wait")
    args = parser.parse_args()
    tracker = FileTracker(args.tracker, args.run, kill_after=args.kill_after)
    sink = BackgroundSink(
        tracker,
        spill_dir=args.spill,
        batch_size=args.batch,
        flush_interval=0.01,
        initial_retry_delay=0.01,
        max_retry_delay=0.05,
        exit_timeout=None,
    )
    print(f"adopted {sink.flush(timeout=0).adopted}", flush=True)
    for step in range(args.first, args.stop):
        sink.log({"x": step}, step)
    print("logged", flush=True)
    if args.then == "wait":
        sys.stdin.read()
        return
    if args.then == "flush":
        sink.flush()
    sink.close(timeout=0.05)
    report = sink.report
    assert report is not None
    fields = dataclasses.asdict(report)
    print("done " + json.dumps(fields, default=str), flush=True)


if __name__ == "__main__":
    main()
