"""Test doubles for BackgroundSink: a tracker that can be down, gated, or refuse entries.

The outage is a test double that raises ConnectionError while switched "down" (a fault
that cannot be provoked for real without a server; the outage tests against a killed
MLflow server live with the MLflow integration).
"""

from __future__ import annotations

import json
import math
import os
import signal
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from gradewire import InvalidInputError, SinkError, Table
from gradewire.sinks import read_spill

FAST = {
    "flush_interval": 0.001,
    "initial_retry_delay": 0.001,
    "max_retry_delay": 0.005,
    "close_timeout": 10.0,
    "exit_timeout": None,
}


class FlakySink:
    """Records every call with its thread; can be switched down, gated, or made to misbehave."""

    def __init__(self) -> None:
        self.records: list[tuple[str, int, dict[str, Any]]] = []
        self.configs: list[tuple[str, dict[str, Any]]] = []
        self.threads: set[str] = set()
        self.down = False
        self.failures = 0
        self.gate: threading.Event | None = None
        self.closed_on: str | None = None
        self.close_error: Exception | None = None
        self.refuse: set[int] = set()
        self.down_after: int | None = None  # go down once this many steps were accepted
        self.poison: set[int] = set()  # always fail, but not as a refusal the sink spells out
        self.poison_calls = 0
        self.lose_reply_once: set[int] = set()
        self.events: list[str] = []  # "step N" / "config", in the order they were accepted

    def _enter(self) -> str:
        name = threading.current_thread().name
        self.threads.add(name)
        if self.gate is not None:
            self.gate.wait()
        if self.down_after is not None and len(self.records) >= self.down_after:
            self.down = True
        if self.down:
            self.failures += 1
            raise ConnectionError("tracker unreachable")
        return name

    def _record(self, name: str, step: int, logs: Mapping[str, Any]) -> None:
        if step in self.refuse:
            raise InvalidInputError(f"step {step} is not acceptable")
        if step in self.poison:
            self.poison_calls += 1
            raise SinkError(f"cannot encode step {step}")
        self.records.append((name, step, dict(logs)))
        self.events.append(f"step {step}")
        if step in self.lose_reply_once:
            # Delivered, but the caller hears of a failure (a reply lost on the way back).
            self.lose_reply_once.discard(step)
            raise ConnectionError("connection reset after the request was sent")

    def log(self, logs: Mapping[str, Any], step: int) -> None:
        self._record(self._enter(), step, logs)

    def log_config(self, config: Mapping[str, Any]) -> None:
        self.configs.append((self._enter(), dict(config)))
        self.events.append("config")

    def close(self) -> None:
        self.threads.add(threading.current_thread().name)
        self.closed_on = threading.current_thread().name
        if self.close_error is not None:
            raise self.close_error

    @property
    def steps(self) -> list[int]:
        return [step for _, step, _ in self.records]


class BatchingFlakySink(FlakySink):
    """The same, plus log_many: a batch is recorded entry by entry, like a sink that loops."""

    def __init__(self) -> None:
        super().__init__()
        self.batch_sizes: list[int] = []

    def log_many(self, entries: Sequence[tuple[int, Mapping[str, Any]]]) -> None:
        name = self._enter()
        self.batch_sizes.append(len(entries))
        refused = [step for step, _ in entries if step in self.refuse]
        if refused:  # checked before anything is recorded, as BaseSink does
            raise InvalidInputError(f"step {refused[0]} is not acceptable")
        poisoned = [step for step, _ in entries if step in self.poison]
        if poisoned:
            self.poison_calls += 1
            raise SinkError(f"cannot encode step {poisoned[0]}")
        for step, logs in entries:
            self._record(name, step, logs)


def wait_until(condition: Callable[[], bool], what: str) -> None:
    """Poll a condition (a liveness guard, not a timing assertion)."""
    deadline = time.monotonic() + 20
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for: {what}"
        time.sleep(0.001)


def gradewire_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith("gradewire-")}


def same(a: object, b: object) -> bool:
    """Equality where NaN equals NaN and types must match (1 != 1.0 != True)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def numbers(logs: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in logs.items() if not isinstance(value, Table)}


def on_disk(spill: Path) -> list[int]:
    """The steps in the spill segments under ``spill`` now, in file order."""
    return [step for path in sorted(spill.glob("*.part-*.jsonl")) for step, _ in read_spill(path)]


class FileTracker:
    """A tracker kept in a file, that several processes can deliver to (adoption tests).

    Each step it accepts is a line ``[step, time, x]``; a close is ``["close", ...]``. It
    is down while the file ``<path>.down`` exists. ``kill_after``: SIGKILL the process
    right after the call that brings the steps it accepted to that many: a kill between a
    call that reached the tracker and the record of it, which no timing can aim at.
    """

    def __init__(self, path: Path, run: str = "run-1", kill_after: int | None = None) -> None:
        self.path = Path(path)
        self.run = run
        self.kill_after = kill_after
        self.accepted = 0
        self.closed = False

    @property
    def down_flag(self) -> Path:
        return self.path.with_name(self.path.name + ".down")

    def delivery_target(self) -> dict[str, Any]:
        return {"kind": "file", "run": {"path": str(self.path), "run": self.run}}

    def _write(self, rows: list[list[Any]]) -> None:
        if self.down_flag.exists():
            raise ConnectionError("tracker unreachable")
        with open(self.path, "a") as file:
            file.write("".join(json.dumps(row) + "\n" for row in rows))

    def log_many_at(
        self, entries: Sequence[tuple[int, Mapping[str, Any]]], times: Sequence[float]
    ) -> None:
        rows = zip(entries, times, strict=True)
        self._write([[step, at, logs.get("x")] for (step, logs), at in rows])
        self.accepted += len(entries)
        if self.kill_after is not None and self.accepted >= self.kill_after:
            os.kill(os.getpid(), signal.SIGKILL)

    def log(self, logs: Mapping[str, Any], step: int) -> None:
        self._write([[step, None, logs.get("x")]])

    def log_config(self, config: Mapping[str, Any]) -> None:
        self._write([["config", None, dict(config)]])

    def close(self) -> None:
        self.closed = True
        self._write([["closed", None, self.run]])

    def replay_close(self, target: Mapping[str, Any] | None, closed_at: float) -> None:
        self._write([["replayed close", closed_at, target]])


def tracker_rows(path: Path) -> list[list[Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
