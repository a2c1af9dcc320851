"""Eval data from JSONL, CSV, Parquet, a Hugging Face dataset saved to disk, or a log.

A log (an Inspect AI ``.eval`` or ``.json`` log, read by ``gradewire[inspect]``) gives its
samples to grade again: each sample's thread (its input messages, then the model's output as
the completion) and metadata (the target among it), under the ids compare pairs them by.

Every row is checked before any grading starts: bad data is reported all at once (up to
a screenful of problems), each naming the file, the line or row, and the field. Rows
with no completion are reported together, with the fields found and the likely one.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from typing_extensions import Unpack

from gradewire.core import InvalidInputError, MissingDependencyError, StringThread
from gradewire.eval.runs._evals_output_items import is_evals_output_items, output_item_rows
from gradewire.eval.runs._samples import (
    DataError,
    DataOptions,
    EvalSample,
    MissingCompletion,
    RowShape,
    assign_ids,
    listing,
    no_completion,
    no_completion_advice,
    sample_from_row,
)
from gradewire.eval.runs._sources import find_run
from gradewire.eval.runs._values import MAX_DEPTH, TooLongInteger

__all__ = ["data_format", "data_hash", "load_samples", "read_samples"]

_SHOWN_ROWS = 5  # rows with no completion named in the message, before "and N more"
_BOM = b"\xef\xbb\xbf"
_Row = tuple[Any, str]  # the parsed row (or the DataError it gave) and where it was


def data_format(path: Path) -> str:
    """The data's format: ``jsonl``, ``csv``, ``parquet``, ``hf``, ``log``, ``evals_output_items``.

    ``hf`` is a folder written by ``save_to_disk``, ``log`` an Inspect AI log,
    ``evals_output_items`` a JSONL of an OpenAI Evals run's output items (each item a row:
    `output_item_rows`).
    """
    if path.is_dir():
        if (path / "dataset_info.json").exists() or (path / "dataset_dict.json").exists():
            return "hf"
        raise DataError(
            f"{path} is a folder but not a Hugging Face dataset saved with save_to_disk "
            "(no dataset_info.json or dataset_dict.json in it)"
        )
    if is_evals_output_items(path):
        return "evals_output_items"
    suffix = path.suffix.lower()
    formats = {
        ".jsonl": "jsonl",
        ".ndjson": "jsonl",
        ".csv": "csv",
        ".parquet": "parquet",
        ".eval": "log",
        ".json": "log",
    }
    if suffix not in formats:
        raise DataError(
            f"{path}: unknown data format {suffix or '(no suffix)'!r}; use .jsonl, .csv, "
            ".parquet, a Hugging Face dataset folder, or an Inspect AI log (.eval, .json)"
        )
    return formats[suffix]


def load_samples(
    path: str | os.PathLike[str], *, limit: int | None = None, **options: Unpack[DataOptions]
) -> list[EvalSample]:
    """Read and check every row of an eval data file (the first ``limit`` rows if given).

    Args:
        path: A ``.jsonl``, ``.csv`` or ``.parquet`` file, or a dataset folder.
        limit: Read only the first ``limit`` rows.
        **options: Which fields hold the prompt and the completion (`DataOptions`).

    Raises:
        DataError: The file is missing or unreadable, or rows are bad; the message lists
            each problem with its file, line/row and field.
        InvalidInputError: The options are wrong.
        MissingDependencyError: Parquet without pyarrow, or a dataset folder without
            ``datasets`` (the message has the pip command).
    """
    return read_samples(path, RowShape.of(options), limit=limit)


def read_samples(
    path: str | os.PathLike[str], shape: RowShape, *, limit: int | None = None
) -> list[EvalSample]:
    """`load_samples` with its options already checked."""
    file = Path(path)
    if not file.exists():
        raise DataError(f"{file}: no such file or folder")
    kind = data_format(file)
    readers = {
        "jsonl": _jsonl_rows,
        "parquet": _parquet_rows,
        "hf": _hf_rows,
        "log": _log_rows,
    }
    if kind == "csv":
        rows = _csv_rows(file, shape)
    elif kind == "evals_output_items":
        rows = output_item_rows(file, shape.prompt_key, shape.completion_key)
    else:
        rows = readers[kind](file)
    parsed: list[tuple[str | None, StringThread, str]] = []
    problems: list[str] = []
    missing: list[MissingCompletion] = []
    for index, (row, where) in enumerate(rows):
        if limit is not None and index >= limit:
            break
        if isinstance(row, DataError):
            problems.append(str(row))
            continue
        try:
            sample_id, thread = sample_from_row(row, where, shape)
        except MissingCompletion as exc:
            missing.append(exc)
            continue
        except DataError as exc:
            problems.append(str(exc))
            continue
        parsed.append((sample_id, thread, where))
    if missing:
        problems.insert(0, _missing_completions(missing, shape))
    samples, repeated = assign_ids(parsed)
    problems.extend(repeated)
    if problems:
        count = len(problems) + len(missing) - (1 if missing else 0)
        raise DataError(listing(str(file), problems, "row", count))
    if not samples:
        raise DataError(f"{file}: no rows to grade")
    return samples


def _missing_completions(missing: list[MissingCompletion], shape: RowShape) -> str:
    """One problem for every row with no completion: they share their cause."""
    places = ", ".join(exc.where for exc in missing[:_SHOWN_ROWS])
    more = len(missing) - _SHOWN_ROWS
    if more > 0:
        places += f" and {more} more"
    fields = [field for exc in missing for field in exc.fields]
    return (
        f"{len(missing)} row(s) have {no_completion(shape)}, at {places}; "
        + no_completion_advice(fields, shape)
    )


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


class _RepeatedKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object that names each key once (``json`` would keep the last silently)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _RepeatedKey(key)
            seen.add(key)
    return out


def _integer(digits: str) -> int | TooLongInteger:
    """An integer literal; one too long for `int` is kept aside so its field is named."""
    try:
        return int(digits)
    except ValueError:
        return TooLongInteger(digits)


def _json_row(line: str, where: str) -> Any:
    try:
        try:
            return json.loads(line, object_pairs_hook=_object)
        except ValueError as exc:
            if isinstance(exc, (json.JSONDecodeError, _RepeatedKey)):
                raise
            # An integer longer than Python reads (sys.get_int_max_str_digits): read again,
            # keeping it aside, so the message names its field.
            return json.loads(line, object_pairs_hook=_object, parse_int=_integer)
    except json.JSONDecodeError as exc:
        return DataError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})")
    except _RepeatedKey as exc:
        return DataError(
            f"{where}: the key {exc.key!r} appears twice in one object; JSON readers would "
            "keep one silently, so keep one yourself"
        )
    except RecursionError:
        return DataError(f"{where}: the row is nested more than {MAX_DEPTH} levels deep")


def _jsonl_rows(file: Path) -> Iterator[_Row]:
    try:
        handle = file.open("rb")
    except OSError as exc:
        raise DataError(f"cannot read {file}: {exc}") from None
    with handle:
        # Each line is decoded alone, so a bad byte is reported on its own line.
        for number, raw in enumerate(handle, start=1):
            where = f"{file}:{number}"
            if number == 1 and raw.startswith(_BOM):
                raw = raw[len(_BOM) :]  # as CSV and most editors allow
            elif number == 1 and raw.startswith((b"\xff\xfe", b"\xfe\xff")):
                raise DataError(f"{where}: the file is UTF-16 text; save it as UTF-8")
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield DataError(f"{where}: not UTF-8 text ({_bad_byte(exc)})"), where
                continue
            if line.strip():
                yield _json_row(line, where), where


def _bad_byte(exc: UnicodeDecodeError) -> str:
    return f"{exc.reason}: byte 0x{exc.object[exc.start]:02x} at column {exc.start + 1}"


def _bad_utf8_line(file: Path) -> tuple[int, str] | None:
    """The first line of ``file`` that is not UTF-8, and why.

    Text readers decode in blocks, so the line they fail on is not the bad byte's.
    """
    with file.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                return number, _bad_byte(exc)
    return None


@contextlib.contextmanager
def _any_cell_size() -> Iterator[None]:
    """No limit on a CSV cell (the csv module's default is 128 KiB), for this read only."""
    previous = csv.field_size_limit(2**31 - 1)  # the largest a C long holds everywhere
    try:
        yield
    finally:
        csv.field_size_limit(previous)


def _csv_rows(file: Path, shape: RowShape) -> Iterator[_Row]:
    try:
        handle = file.open(encoding="utf-8-sig", newline="")
    except OSError as exc:
        raise DataError(f"cannot read {file}: {exc}") from None
    with handle, _any_cell_size():
        reader = csv.reader(handle)
        try:
            fields = next(reader, [])
            _check_header(file, fields, shape)
            for cells in reader:
                if cells:  # a blank line
                    where = f"{file}:{reader.line_num}"
                    yield _decode_csv_row(fields, cells, where, shape), where
        except UnicodeDecodeError:
            bad = _bad_utf8_line(file)
            line, why = bad if bad is not None else (reader.line_num, "undecodable")
            raise DataError(f"{file}:{line}: not UTF-8 text ({why})") from None
        except csv.Error as exc:
            raise DataError(f"{file}:{reader.line_num}: {exc}") from None


def _check_header(file: Path, fields: list[str], shape: RowShape) -> None:
    repeated = sorted({field for field in fields if fields.count(field) > 1})
    if repeated:
        raise DataError(
            f"{file}:1: the column {repeated[0]!r} appears twice in the header; a row would "
            "keep one of its cells silently, so rename or drop one"
        )
    if "messages" not in fields and shape.prompt_key not in fields:
        raise DataError(
            f"{file}:1: no 'messages' or {shape.prompt_key!r} column (columns: "
            f"{', '.join(fields)}); a CSV needs a {shape.prompt_key!r} and a "
            f"{shape.completion_key!r} column, or 'messages' as JSON"
        )


def _decode_csv_row(fields: list[str], cells: list[str], where: str, shape: RowShape) -> Any:
    if len(cells) > len(fields):
        return DataError(f"{where}: more cells than columns in the header")
    out: dict[str, Any] = dict(zip(fields, cells, strict=False))
    for key in ("messages", shape.prompt_key):
        text = out.get(key)
        # A CSV cell is text: a conversation in one is a JSON list of messages.
        if isinstance(text, str) and (key == "messages" or text.lstrip().startswith("[{")):
            try:
                out[key] = json.loads(text)
            except (ValueError, RecursionError) as exc:
                reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "too deep"
                return DataError(
                    f"{where}: field {key!r} is not a JSON list of messages ({reason})"
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


def _log_rows(file: Path) -> Iterator[_Row]:
    """The samples of a log an installed integration reads (an Inspect AI log), as rows."""
    try:
        run = find_run(str(file))
    except InvalidInputError as exc:
        raise DataError(
            f"{exc} (eval data in JSON is one object per line, in a .jsonl file)"
        ) from None
    if run is None:
        raise MissingDependencyError(
            "inspect-ai", extra="inspect", purpose=f"read the Inspect AI log {file}"
        )
    for record in run.records:
        where = f"{file}: sample {record.id!r}"
        turns = list(record.input.get("turns") or ())
        if not turns or turns[-1].get("role") != "assistant":
            where += " (it has no output: it errored in the log; inspect eval-retry runs it again)"
        yield {"id": record.id, "messages": turns, "metadata": dict(record.metadata)}, where
