"""The run folder: config, results appended line by line, summary and report.

``results.jsonl`` is append-only: each line holds one sample's input and the outcomes of
the graders that just graded it. Reading folds the lines in order, so a later outcome
of the same grader on the same sample (a retried error, a changed spec) wins. A line cut
by a crash is dropped and the file is trimmed to its last full line before appending.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from gradewire.core import InvalidInputError
from gradewire.eval._records import GradeOutcome, SampleRecord

__all__ = [
    "CONFIG",
    "REPORT",
    "RESULTS",
    "SUMMARY",
    "ResultsWriter",
    "read_config",
    "read_records",
    "write_json",
]

CONFIG = "config.json"
RESULTS = "results.jsonl"
SUMMARY = "summary.json"
REPORT = "report.html"


def read_config(folder: Path) -> dict[str, Any] | None:
    """The run's config, or None for a folder that holds no run yet."""
    path = folder / CONFIG
    if not path.exists():
        return None
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InvalidInputError(f"{path} is not a readable run config: {exc}") from exc
    if not isinstance(config, dict):
        raise InvalidInputError(f"{path} is not a run config (not a JSON object)")
    return config


def write_json(path: Path, data: Any) -> None:
    """Write JSON through a temporary file, so a crash never leaves half a file."""
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(temporary, path)


def read_records(folder: Path) -> dict[str, SampleRecord]:
    """Every sample of the folder, in order of first appearance, later outcomes winning."""
    path = folder / RESULTS
    records: dict[str, SampleRecord] = {}
    if not path.exists():
        return records
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.endswith(b"\n"):
                break  # a line cut by a crash: it is trimmed before the next append
            try:
                line = json.loads(raw)
                sample_id = line["id"]
                outcomes = {key: GradeOutcome.from_json(o) for key, o in line["grades"].items()}
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                raise InvalidInputError(
                    f"{path}:{number}: not a results line ({exc}); the folder is not a "
                    "gradewire run or was edited by hand"
                ) from None
            old = records.get(sample_id)
            merged = {**old.outcomes, **outcomes} if old else outcomes
            records[sample_id] = SampleRecord(sample_id, line["input"], line["input_hash"], merged)
    return records


class ResultsWriter:
    """Appends result lines to ``results.jsonl``, each flushed as it is written."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / RESULTS
        _trim_torn_tail(path)
        self._handle: IO[str] = path.open("a", encoding="utf-8", errors="surrogatepass")
        self.lines = 0

    def write(
        self,
        sample_id: str,
        input_hash: str,
        thread: Mapping[str, Any],
        outcomes: Mapping[str, GradeOutcome],
    ) -> None:
        """Append one sample's outcomes (the graders that just graded it)."""
        line = {
            "id": sample_id,
            "input_hash": input_hash,
            "input": thread,
            "grades": {key: outcome.to_json() for key, outcome in outcomes.items()},
        }
        # ensure_ascii keeps a lone surrogate (half an emoji) as an escape, not invalid UTF-8.
        self._handle.write(json.dumps(line, ensure_ascii=True, allow_nan=False) + "\n")
        # Flushed per line: a killed run keeps every sample graded before the kill.
        self._handle.flush()
        self.lines += 1

    def close(self) -> None:
        """Flush and close the file."""
        if not self._handle.closed:
            self._handle.flush()
            os.fsync(self._handle.fileno())
            self._handle.close()


def _trim_torn_tail(path: Path) -> None:
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("rb+") as handle:
        data = handle.read()
        if not data.endswith(b"\n"):
            handle.truncate(data.rfind(b"\n") + 1)
