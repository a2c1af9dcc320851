"""JsonlSink: one strict-JSON line per step in a local file, and `read_jsonl` to load it."""

from __future__ import annotations

import json
import logging
import math
import os
import time
from collections.abc import Mapping, Set
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np

from gradewire.core._errors import InvalidInputError, InvalidTypeError, SinkError
from gradewire.core._histogram import Histogram
from gradewire.core._logging_core import LogValue
from gradewire.core._table import Table
from gradewire.sinks._base_sink import BaseSink
from gradewire.sinks._rank import process_rank
from gradewire.sinks._step_history import StepHistory
from gradewire.sinks._table_policy import TablePolicy

__all__ = ["JsonlRun", "JsonlSink", "read_jsonl"]

logger = logging.getLogger("gradewire")

_TOKENS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _token(value: float) -> float | str:
    """A float JSON can hold: non-finite values become "NaN", "Infinity" or "-Infinity"."""
    if math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def _jsonable(value: object, depth: int = 0) -> Any:
    """Config values as strict JSON: containers walked, unknown objects as ``str(value)``."""
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return _token(value)
    if depth > 50:  # a cycle or absurd nesting: keep a readable trace instead of failing
        return str(value)
    if isinstance(value, Table | Histogram):
        return _jsonable(value.to_dict(), depth + 1)
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, Set):
        return sorted((_jsonable(v, depth + 1) for v in value), key=repr)
    if isinstance(value, list | tuple):
        return [_jsonable(v, depth + 1) for v in value]
    return str(value)


def _dumps(record: dict[str, Any]) -> str:
    # ASCII escapes keep lone surrogates from model output writable and the file pure ASCII.
    return json.dumps(record, ensure_ascii=True, allow_nan=False) + "\n"


class JsonlSink(BaseSink):
    """Appends one JSON line per step to a local file; the default sink with no tracker.

    A step is written as ``{"step": 3, "time": <unix seconds>, "metrics": {...},
    "tables": {key: {"columns": [...], "data": [[...]]}}}`` and each config call as
    ``{"config": {...}}``. The JSON is strict: a non-finite float is written as the
    string "NaN", "Infinity" or "-Infinity" (table cells holding one are listed under
    ``"nonfinite": {key: [[row, column], ...]}``), and `read_jsonl` turns them back into
    floats. Histograms go under ``"histograms": {key: {"edges": [...], "counts": [...],
    "below": 0, "above": 0, "nonfinite": 0}}`` (only in steps that have one), as counts,
    so histograms of several files add up exactly. Each line is flushed when written, so a
    crash loses at most that line; an append to a file whose last line was cut starts on a
    new line.

    Example:
        >>> sink = JsonlSink("runs/eval.jsonl")  # doctest: +SKIP
        >>> sink.log(grader.get_logs(clear=True), step=10)  # doctest: +SKIP
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        table_policy: TablePolicy | None = None,
        all_ranks: bool = False,
    ) -> None:
        """Set up the sink; the file and its folders are created on the first write.

        Args:
            path: The file to append to. ``{rank}`` in it is replaced by the process
                rank, for one file per process with ``all_ranks=True``.
            table_policy: Applied before writing; None writes tables as they are.
            all_ranks: Write on every process, not only on rank 0.
        """
        if not isinstance(path, str | os.PathLike):
            raise InvalidTypeError(f"path must be a str or Path, not {type(path).__name__}")
        super().__init__(table_policy=table_policy, all_ranks=all_ranks)
        text = os.fspath(path)
        if "{rank}" in text:
            text = text.replace("{rank}", str(process_rank()))
        self.path = Path(text)
        self._file: IO[str] | None = None

    def _open(self) -> IO[str]:
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            cut = False
            if self.path.exists() and self.path.stat().st_size > 0:
                with self.path.open("rb") as existing:
                    existing.seek(-1, os.SEEK_END)
                    cut = existing.read(1) != b"\n"
            self._file = self.path.open("a", encoding="utf-8", newline="\n")
            if cut:
                self._file.write("\n")
        return self._file

    def _append(self, text: str, what: str) -> None:
        try:
            file = self._open()
            file.write(text)
            file.flush()
        except OSError as exc:
            raise SinkError(
                f"could not write {what} to {self.path}: {exc}; it was not written: check "
                "that the folder is writable and the disk has space"
            ) from exc

    def _write(self, logs: dict[str, LogValue], step: int) -> None:
        self._append(_dumps(_step_record(logs, step)), f"step {step}")

    def _write_many(self, entries: list[tuple[int, dict[str, LogValue]]]) -> None:
        text = "".join(_dumps(_step_record(logs, step)) for step, logs in entries)
        self._append(text, f"steps {entries[0][0]}..{entries[-1][0]}")

    def _write_config(self, config: dict[str, Any]) -> None:
        self._append(_dumps({"config": _jsonable(config)}), "the config")

    def _close(self) -> None:
        if self._file is not None:
            file, self._file = self._file, None
            try:
                file.close()
            except OSError as exc:
                raise SinkError(f"could not close {self.path}: {exc}") from exc

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.path)!r})"


def _step_record(logs: Mapping[str, LogValue], step: int) -> dict[str, Any]:
    metrics: dict[str, float | str] = {}
    tables: dict[str, Any] = {}
    histograms: dict[str, Any] = {}
    nonfinite: dict[str, list[list[int]]] = {}
    for key, value in logs.items():
        if isinstance(value, Table):
            data = value.to_dict()
            for r, row in enumerate(data["data"]):
                for c, cell in enumerate(row):
                    if isinstance(cell, float) and not math.isfinite(cell):
                        row[c] = _token(cell)
                        nonfinite.setdefault(key, []).append([r, c])
            tables[key] = data
        elif isinstance(value, Histogram):
            histograms[key] = value.to_dict()
        else:
            metrics[key] = _token(value) if isinstance(value, float) else value
    record: dict[str, Any] = {
        "step": step,
        "time": time.time(),
        "metrics": metrics,
        "tables": tables,
    }
    if histograms:
        record["histograms"] = histograms
    if nonfinite:
        record["nonfinite"] = nonfinite
    return record


@dataclass
class JsonlRun(StepHistory):
    """What `read_jsonl` found in a file.

    Attributes:
        path: The file read.
        config: Every config line merged in order, later keys winning. Non-finite floats
            in the config come back as the strings "NaN", "Infinity", "-Infinity".
        steps: One ``(step, logs)`` pair per step line, in file order, with tables rebuilt.
        skipped_lines: Line numbers (from 1) that could not be read, such as a last line
            cut by a crash.
    """

    path: Path
    config: dict[str, Any] = field(default_factory=dict)
    steps: list[tuple[int, dict[str, LogValue]]] = field(default_factory=list)
    skipped_lines: list[int] = field(default_factory=list)


def read_jsonl(path: str | os.PathLike[str]) -> JsonlRun:
    """Load a file written by `JsonlSink`.

    A line that cannot be read (typically the last one, cut by a crash) is skipped,
    listed in `JsonlRun.skipped_lines` and reported with a warning through `logging`;
    everything else is kept.

    Raises:
        InvalidInputError: The file cannot be opened, or has lines but none of them is a
            gradewire step or config line.
    """
    run = JsonlRun(Path(os.fspath(path)))
    try:
        text = run.path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise InvalidInputError(
            f"cannot read {run.path}: {exc}; pass the path a JsonlSink wrote to"
        ) from exc
    lines = text.split("\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            if isinstance(record, dict) and set(record) == {"config"}:
                if not isinstance(record["config"], dict):
                    raise TypeError("config is not an object")
                run.config.update(record["config"])
            else:
                run.steps.append(_parse_step(record))
        except (ValueError, TypeError, KeyError, IndexError, AttributeError):
            run.skipped_lines.append(number)
    if run.skipped_lines:
        if not run.steps and not run.config:
            raise InvalidInputError(
                f"{run.path} has no gradewire step or config line; is it a file JsonlSink wrote?"
            )
        logger.warning(
            "read_jsonl(%r) skipped %d unreadable line(s) %s (a line cut by a crash is expected)",
            str(run.path),
            len(run.skipped_lines),
            run.skipped_lines,
        )
    return run


def _parse_step(record: object) -> tuple[int, dict[str, LogValue]]:
    if not isinstance(record, dict):
        raise TypeError("not an object")
    step = record["step"]
    if isinstance(step, bool) or not isinstance(step, int):
        raise TypeError("step is not an int")
    logs: dict[str, LogValue] = {}
    for key, value in record.get("metrics", {}).items():
        if isinstance(value, str):
            logs[key] = _TOKENS[value]
        elif isinstance(value, int | float) and not isinstance(value, bool):
            logs[key] = value
        else:
            raise TypeError(f"metric {key!r} is not a number")
    nonfinite = record.get("nonfinite", {})
    for key, data in record.get("tables", {}).items():
        for r, c in nonfinite.get(key, []):
            data["data"][r][c] = _TOKENS[data["data"][r][c]]
        logs[key] = Table.from_dict(data)
    for key, data in record.get("histograms", {}).items():
        logs[key] = Histogram.from_dict(data)
    return step, logs
