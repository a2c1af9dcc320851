"""Eval data from JSONL, CSV, Parquet or a Hugging Face dataset saved to disk.

Every row is checked before any grading starts: bad data is reported all at once (up to
a screenful of problems), each naming the file, the line or row, and the field.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from gradewire.core import MissingDependencyError, StringThread
from gradewire.eval._samples import DataError, EvalSample, assign_ids, sample_from_row

__all__ = ["data_format", "data_hash", "load_samples"]

_MAX_REPORTED = 20
_Row = tuple[Any, str]  # the parsed row (or the exception it raised) and where it was


def data_format(path: Path) -> str:
    """``jsonl``, ``csv``, ``parquet`` or ``hf`` (a folder written by ``save_to_disk``)."""
    if path.is_dir():
        if (path / "dataset_info.json").exists() or (path / "dataset_dict.json").exists():
            return "hf"
        raise DataError(
            f"{path} is a folder but not a Hugging Face dataset saved with save_to_disk "
            "(no dataset_info.json or dataset_dict.json in it)"
        )
    suffix = path.suffix.lower()
    formats = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".parquet": "parquet"}
    if suffix not in formats:
        raise DataError(
            f"{path}: unknown data format {suffix or '(no suffix)'!r}; use .jsonl, .csv, "
            ".parquet, or a Hugging Face dataset folder"
        )
    return formats[suffix]


def load_samples(path: str | os.PathLike[str], *, limit: int | None = None) -> list[EvalSample]:
    """Read and check every row of an eval data file (the first ``limit`` rows if given).

    Raises:
        DataError: The file is missing or unreadable, or rows are bad; the message lists
            each problem with its file, line/row and field.
        MissingDependencyError: Parquet without pyarrow, or a dataset folder without
            ``datasets`` (the message has the pip command).
    """
    file = Path(path)
    if not file.exists():
        raise DataError(f"{file}: no such file or folder")
    kind = data_format(file)
    readers = {"jsonl": _jsonl_rows, "csv": _csv_rows, "parquet": _parquet_rows, "hf": _hf_rows}
    parsed: list[tuple[str | None, StringThread, str]] = []
    problems: list[str] = []
    for index, (row, where) in enumerate(readers[kind](file)):
        if limit is not None and index >= limit:
            break
        if isinstance(row, DataError):
            problems.append(str(row))
            continue
        try:
            sample_id, thread = sample_from_row(row, where)
        except DataError as exc:
            problems.append(str(exc))
            continue
        parsed.append((sample_id, thread, where))
    if not problems:
        try:
            samples = assign_ids(parsed)
        except DataError as exc:
            problems.append(str(exc))
    if problems:
        shown = problems[:_MAX_REPORTED]
        more = len(problems) - len(shown)
        tail = f"\n  ... and {more} more" if more else ""
        raise DataError(
            f"{file}: {len(problems)} bad row(s), nothing was graded:\n  "
            + "\n  ".join(shown)
            + tail
        )
    if not samples:
        raise DataError(f"{file}: no rows to grade")
    return samples


def data_hash(path: str | os.PathLike[str]) -> str:
    """SHA-256 of the data file (of every file, with its name, for a dataset folder)."""
    root = Path(path)
    digest = hashlib.sha256()
    files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
    for file in files:
        if root.is_dir():
            digest.update(file.relative_to(root).as_posix().encode() + b"\0")
        with file.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def _jsonl_rows(file: Path) -> Iterator[_Row]:
    try:
        handle = file.open(encoding="utf-8", newline="")
    except OSError as exc:
        raise DataError(f"cannot read {file}: {exc}") from None
    with handle:
        number = 0
        try:
            for number, line in enumerate(handle, start=1):
                where = f"{file}:{number}"
                if not line.strip():
                    continue
                try:
                    yield json.loads(line), where
                except json.JSONDecodeError as exc:
                    yield (
                        DataError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})"),
                        where,
                    )
        except UnicodeDecodeError as exc:
            raise DataError(f"{file}:{number + 1}: not UTF-8 text ({exc.reason})") from None


def _csv_rows(file: Path) -> Iterator[_Row]:
    try:
        handle = file.open(encoding="utf-8-sig", newline="")
    except OSError as exc:
        raise DataError(f"cannot read {file}: {exc}") from None
    with handle:
        reader = csv.DictReader(handle)
        fields = reader.fieldnames or []
        if "messages" not in fields and "prompt" not in fields:
            raise DataError(
                f"{file}:1: no 'messages' or 'prompt' column (columns: {', '.join(fields)}); "
                "a CSV needs a 'prompt' and a 'completion' column, or 'messages' as JSON"
            )
        try:
            for row in reader:
                where = f"{file}:{reader.line_num}"
                yield _decode_csv_row(row, where), where
        except (UnicodeDecodeError, csv.Error) as exc:
            raise DataError(f"{file}:{reader.line_num}: {exc}") from None


def _decode_csv_row(row: Mapping[str | None, Any], where: str) -> Any:
    if None in row:
        return DataError(f"{where}: more cells than columns in the header")
    out: dict[str, Any] = {key: value for key, value in row.items() if key is not None}
    for key in ("messages", "prompt"):
        text = out.get(key)
        # A CSV cell is text: a conversation in one is a JSON list of messages.
        if isinstance(text, str) and (key == "messages" or text.lstrip().startswith("[{")):
            try:
                out[key] = json.loads(text)
            except json.JSONDecodeError as exc:
                return DataError(
                    f"{where}: field {key!r} is not a JSON list of messages ({exc.msg})"
                )
    if out.get("id") == "":
        out.pop("id")
    return out


def _parquet_rows(file: Path) -> Iterator[_Row]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise MissingDependencyError(
            "pyarrow", extra="parquet", purpose="read eval data from Parquet files"
        ) from None
    try:
        table = pq.read_table(file)
    except Exception as exc:  # pyarrow raises its own hierarchy for unreadable files
        raise DataError(f"cannot read {file} as Parquet: {exc}") from None
    for index, row in enumerate(table.to_pylist()):
        yield row, f"{file} row {index}"


def _hf_rows(folder: Path) -> Iterator[_Row]:
    try:
        import datasets
    except ImportError:
        raise MissingDependencyError(
            "datasets", extra="datasets", purpose="read Hugging Face datasets saved to disk"
        ) from None
    try:
        loaded = datasets.load_from_disk(str(folder))
    except Exception as exc:  # datasets raises several types for a damaged folder
        raise DataError(f"cannot load the dataset in {folder}: {exc}") from None
    if isinstance(loaded, datasets.DatasetDict):
        splits = list(loaded)
        if len(splits) != 1:
            raise DataError(
                f"{folder} holds the splits {', '.join(splits)}; pass one split's folder "
                f"(for example {folder / splits[0]})"
            )
        loaded = loaded[splits[0]]
    for index, row in enumerate(loaded):
        yield row, f"{folder} row {index}"
