"""Training processes that are killed, and what they leave: for the adoption and sync tests.

- `Child`: a real `spill_child.py` process logging to a `FileTracker` through a
  BackgroundSink; the tests kill it with SIGKILL.
- `spilled(spill)`: the steps the spill files hold, sorted, each as often as it is there.
- `sent(tracker)` / `stored(tracker)`: the steps that reached the tracker, each time they
  did / as a tracker that recognises a step by its step and time stores them.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

from background_doubles import tracker_rows

from gradewire.sinks import read_spill
from support.processes import SpillChild, child_env

CHILD = Path(__file__).with_name("spill_child.py")


class Child(SpillChild):
    """A `spill_child.py` process; its stdout is read line by line."""

    def __init__(self, tmp: Path, run: str, first: int, stop: int, *options: str) -> None:
        command = [sys.executable, str(CHILD), str(tmp / "spill"), str(tmp / "tracker")]
        super().__init__(
            [*command, run, str(first), str(stop), *options], child_env(CHILD.parent), "child"
        )

    def report(self) -> dict[str, Any]:
        line = self.line()
        assert line.startswith("done "), line
        self.process.wait(30)
        self.kill()
        result: dict[str, Any] = json.loads(line.removeprefix("done "))
        return result


def spilled(spill: Path) -> list[int]:
    """Every step in the spill files under ``spill``, sorted; repeats are kept."""
    logging.disable(logging.WARNING)  # a line cut by the kill is skipped with a warning
    try:
        return sorted(s for path in spill.glob("*.jsonl") for s, _ in read_spill(path))
    finally:
        logging.disable(logging.NOTSET)


def stored(tracker: Path) -> list[int]:
    """The steps a tracker holds: a step sent again with its time is the same point."""
    points = {(row[0], row[1]) for row in tracker_rows(tracker) if isinstance(row[0], int)}
    return sorted(step for step, _ in points)


def sent(tracker: Path) -> list[int]:
    """Every step that reached the tracker, counted each time it did."""
    return [row[0] for row in tracker_rows(tracker) if isinstance(row[0], int)]
