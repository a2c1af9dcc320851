"""A BackgroundSink whose tracker is down and whose spill directory is on a tiny filesystem.

Run as a script by test_full_disk.py: ``python full_disk_scenario.py SPILL_DIR MODE``. The
directory is on a 64 KiB tmpfs (in a mount namespace of its own) or, where no namespace can
be made, files are capped by RLIMIT_FSIZE (the environment says how). Prints one JSON
object: what was logged, what was delivered, what the files looked like while the disk was
full, and the final report.
"""

from __future__ import annotations

import json
import logging
import os
import resource
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from gradewire import BackgroundSink, SinkError, Table
from gradewire.sinks import read_spill

STEPS = 300
MAX_QUEUE = 40


class Tracker:
    """Down until told otherwise; records the steps it accepts."""

    def __init__(self) -> None:
        self.down = True
        self.steps: list[int] = []

    def log(self, logs: dict[str, Any], step: int) -> None:
        if self.down:
            raise ConnectionError("tracker unreachable")
        self.steps.append(step)

    def log_config(self, config: dict[str, Any]) -> None:
        pass

    def close(self) -> None:
        pass


class Errors(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def logs(step: int) -> dict[str, Any]:
    table = Table(initial_headers=["completion", "score"])
    table.add_row(["y" * 400, step / STEPS])  # ~450 bytes a line: 64 KiB holds ~130
    return {"score/mean": step / STEPS, "samples": table}


def wait_until(condition: Any, what: str) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"gave up waiting for: {what}")
        time.sleep(0.005)


def whole_files(spill: Path) -> dict[str, bool]:
    """Each spill file at rest: does it end on a record boundary, and does every line decode?

    The worker may be appending as we look (it retries a spill while the disk is full), and an
    append in progress is half written by nature, until it completes or is cut back: a file
    seen so is looked at again, for up to a second, and counts as torn only if it stays so.
    """
    for _ in range(100):
        found = _whole_now(spill)
        if all(found.values()):
            break
        time.sleep(0.01)
    return found


def _whole_now(spill: Path) -> dict[str, bool]:
    found: dict[str, bool] = {}
    for path in sorted(spill.glob("*.jsonl")):
        try:
            data = path.read_bytes()
        except FileNotFoundError:  # replayed and removed as we looked
            continue
        whole = data.endswith(b"\n") or not data
        found[path.name] = whole and all(json.loads(line) for line in data.splitlines())
    return found


def main() -> None:
    spill, mode = Path(sys.argv[1]) / "spill", sys.argv[2]
    limit = os.environ.get("FULL_DISK_FSIZE")
    if limit:  # no mount namespace here: cap file sizes instead (EFBIG, not ENOSPC)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (int(limit), int(limit)))
    errors = Errors()
    logging.getLogger("gradewire").addHandler(errors)
    tracker = Tracker()
    filler = Path(sys.argv[1]) / "filler"
    if mode == "block" and not limit:
        filler.write_bytes(b"x" * 32 * 1024)  # half of the disk, freed once log() blocks
    default = mode in ("drop_newest", "close_while_full")
    options: dict[str, Any] = {} if default else {"when_full": mode}
    background = BackgroundSink(
        tracker,
        spill_dir=spill,
        max_queue=MAX_QUEUE,
        flush_interval=0.01,
        initial_retry_delay=0.01,
        max_retry_delay=0.05,
        exit_timeout=None,
        **options,
    )
    returned: list[int] = []
    refused: list[str] = []

    def produce() -> None:
        for step in range(STEPS):
            try:
                background.log(logs(step), step)
            except SinkError as exc:
                refused.append(str(exc))
                continue
            returned.append(step)

    producer = threading.Thread(target=produce)
    producer.start()
    wait_until(lambda: any("cannot write the spill file" in m for m in errors.messages), "ENOSPC")
    if mode == "block":
        wait_until(lambda: len(returned) >= MAX_QUEUE, "memory to fill")
        blocked_at = len(returned)
        time.sleep(0.2)
        still_blocked = producer.is_alive() and len(returned) == blocked_at
        files_while_full = whole_files(spill)  # before room returns and replay empties the folder
        filler.unlink(missing_ok=True)
        tracker.down = False  # room on both sides: the disk (not enough alone) and delivery
    else:
        still_blocked = None
    producer.join()
    if mode != "block":
        files_while_full = whole_files(spill)
    if mode != "close_while_full":
        tracker.down = False
    background.close(timeout=0.2 if mode == "close_while_full" else 20)
    report = background.report
    assert report is not None
    paths = getattr(report, "spill_paths", [report.spill_path] if report.spill_path else [])
    kept = [step for path in paths for step, _ in read_spill(path)]
    print(
        json.dumps(
            {
                "returned": returned,
                "refused": refused,
                "delivered": tracker.steps,
                "kept": kept,
                "files_while_full": files_while_full,
                "files_after": whole_files(spill),
                "still_blocked": still_blocked,
                "errors": errors.messages,
                "report": {
                    "delivered": report.delivered,
                    "pending": report.pending,
                    "lost": getattr(report, "lost", 0),  # not counted before it was reported
                    "lost_reason": getattr(report, "lost_reason", None),
                    "rejected": report.rejected,
                    "spill_paths": [str(p) for p in paths],
                    "ok": report.ok,
                },
            }
        )
    )


if __name__ == "__main__":
    main()
