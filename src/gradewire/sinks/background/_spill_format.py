"""The spill format: entries a `BackgroundSink` could not deliver yet, one JSON line each.

Every line is strict JSON (no NaN tokens), so any JSON reader can open the file:

- a step: ``{"v": 1, "seq": 7, "t": 1718000000.25, "step": 3, "logs": {"score/mean": 0.5}}``
- a config: ``{"v": 1, "seq": 2, "t": 1718000000.0, "config": {...}}``
- a close: ``{"v": 1, "seq": 9, "t": 1718000001.5, "close": {"owner": ..., "target": ...}}``,
  the last entry of a sink closed while entries were still pending: what its ``close()``
  would have done (end the run) is done once they are delivered.

``seq`` is the order in which the entries were logged, ``t`` the time of the call (Unix
seconds; older files lack it), which a tracker may use to recognise an entry it already
has. A value that JSON cannot hold is wrapped in a one-key object: ``{"$float": "nan" |
"inf" | "-inf"}``, ``{"$table": {"columns": [...], "data": [[...]]}}`` (`Table.to_dict`,
cells encoded the same way), ``{"$histogram": {...}}`` (`Histogram.to_dict`), and in configs
``{"$dict": {...}}`` for a user dict that itself has a single key starting with ``$``.
"""

from __future__ import annotations

import json
import logging
import math
import os
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gradewire.core._errors import InvalidInputError, InvalidTypeError
from gradewire.core._histogram import Histogram
from gradewire.core._logging_core import LogValue
from gradewire.core._table import Cell, Table
from gradewire.sinks._sink import StepLogs
from gradewire.sinks.background._owner import read_state, segment_stem, state_path

__all__ = [
    "Entry",
    "copy_table",
    "decode_entry",
    "encode_entry",
    "read_spill",
    "read_spill_configs",
    "snapshot_config",
]

logger = logging.getLogger("gradewire")

_VERSION = 1


@dataclass(frozen=True, slots=True)
class Entry:
    """One `log` or `log_config` call, numbered in the order it was made.

    Or the close of a sink whose entries were still pending (``close``: its owner's stem
    and delivery target). ``time``: when the call was made (Unix seconds), if known.
    """

    seq: int
    step: int | None
    logs: dict[str, LogValue] | None
    config: dict[str, Any] | None
    time: float | None = None
    close: dict[str, Any] | None = None


def _plain_scalar(value: object) -> tuple[bool, Any]:
    """(True, the value as an exact builtin None/bool/int/float/str), or (False, None)."""
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(value, numpy.generic):
        value = value.item()
    # Subclasses (IntEnum, np.float64, str enums) become the builtin, so that the delivered and
    # the spilled config are equal.
    if value is None or isinstance(value, bool):
        return True, value
    if isinstance(value, str):
        return True, str.__str__(value)
    if isinstance(value, int):
        return True, int.__int__(value)
    if isinstance(value, float):
        return True, float.__float__(value)
    return False, None


def copy_table(table: Table) -> Table:
    """A copy of ``table`` that shares no list with it (cells are immutable)."""
    if type(table) is not Table:
        return table.__copy__()
    # Cells are immutable scalars, so copying the row lists is enough; Table.__copy__ deep-copies
    # (about 20x slower) and from_dict re-checks every cell, both on the training loop's thread.
    copy = Table.__new__(Table)
    copy._headers = list(table._headers)
    copy._rows = [list(row) for row in table._rows]
    return copy


def snapshot_config(config: object, path: str = "config") -> Any:
    """A JSON-shaped copy of a run configuration (tuples become lists, numpy scalars numbers).

    Both the delivered and the spilled config are this copy, so a tracker gets the same
    value whether or not it was down.

    Raises:
        InvalidTypeError: A part of the config is not JSON-shaped; the message names it.
    """
    is_scalar, scalar = _plain_scalar(config)
    if is_scalar:
        return scalar
    if isinstance(config, Mapping):
        out: dict[str, Any] = {}
        for key, value in config.items():
            if not isinstance(key, str):
                raise InvalidTypeError(
                    f"{path} has the key {key!r} of type {type(key).__name__}; config keys must "
                    "be str: use str(key)"
                )
            out[key] = snapshot_config(value, f"{path}[{key!r}]")
        return out
    if isinstance(config, list | tuple):
        return [snapshot_config(value, f"{path}[{i}]") for i, value in enumerate(config)]
    raise InvalidTypeError(
        f"{path} is a {type(config).__name__}; a config holds only dicts, lists, str, numbers, "
        "bools and None, so that it can be kept on disk while a tracker is down: convert it "
        "first, e.g. with str(value) or model.model_dump(mode='json')"
    )


def _encode_float(value: float) -> float | dict[str, str]:
    if math.isfinite(value):
        return value
    return {"$float": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}


def _encode_cell(cell: Cell) -> Any:
    return _encode_float(cell) if isinstance(cell, float) else cell


def _encode_log_value(value: LogValue) -> Any:
    if isinstance(value, Table):
        data = [[_encode_cell(cell) for cell in row] for row in value.rows]
        return {"$table": {"columns": value.headers, "data": data}}
    if isinstance(value, Histogram):
        return {"$histogram": value.to_dict()}
    return _encode_float(value) if isinstance(value, float) else value


def _encode_config(value: Any) -> Any:
    if isinstance(value, float):
        return _encode_float(value)
    if isinstance(value, list):
        return [_encode_config(item) for item in value]
    if isinstance(value, dict):
        encoded = {key: _encode_config(item) for key, item in value.items()}
        if len(value) == 1 and next(iter(value)).startswith("$"):
            return {"$dict": encoded}
        return encoded
    return value


def encode_entry(entry: Entry, error: str | None = None) -> bytes:
    """One spill line (UTF-8, ending in a newline) for ``entry``; ``error``: why it was refused."""
    record: dict[str, Any] = {"v": _VERSION, "seq": entry.seq}
    if entry.time is not None:
        record["t"] = entry.time
    if error is not None:
        record["error"] = error
    if entry.close is not None:
        record["close"] = entry.close
    elif entry.config is not None:
        record["config"] = _encode_config(entry.config)
    else:
        assert entry.logs is not None
        record["step"] = entry.step
        record["logs"] = {key: _encode_log_value(value) for key, value in entry.logs.items()}
    return (json.dumps(record, allow_nan=False, separators=(",", ":")) + "\n").encode()


def _decode_float(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"$float"}:
        return float(value["$float"])
    return value


def _decode_log_value(value: Any) -> LogValue:
    if isinstance(value, dict) and set(value) == {"$table"}:
        table = value["$table"]
        data = [[_decode_float(cell) for cell in row] for row in table["data"]]
        return Table.from_dict({"columns": table["columns"], "data": data})
    if isinstance(value, dict) and set(value) == {"$histogram"}:
        return Histogram.from_dict(value["$histogram"])
    decoded = _decode_float(value)
    if isinstance(decoded, bool) or not isinstance(decoded, int | float):
        raise ValueError(f"not a number or a table: {value!r}")
    return decoded


def _decode_config(value: Any) -> Any:
    if isinstance(value, list):
        return [_decode_config(item) for item in value]
    if isinstance(value, dict):
        if set(value) == {"$float"}:
            return _decode_float(value)
        if set(value) == {"$dict"}:
            value = value["$dict"]
        return {key: _decode_config(item) for key, item in value.items()}
    return value


def _reject_constant(name: str) -> float:
    raise ValueError(f"bare {name} is not strict JSON")


def decode_entry(line: bytes | str) -> Entry:
    """The `Entry` that `encode_entry` wrote as ``line``.

    Raises:
        ValueError: The line is not a spill record (bad JSON, missing or wrong fields).
    """
    record = json.loads(line, parse_constant=_reject_constant)
    if not isinstance(record, dict) or record.get("v") != _VERSION:
        raise ValueError(f"not a version-{_VERSION} spill record")
    seq, stamp = record["seq"], record.get("t")
    if isinstance(seq, bool) or not isinstance(seq, int):
        raise ValueError("'seq' must be an int")
    if stamp is not None and (isinstance(stamp, bool) or not isinstance(stamp, int | float)):
        raise ValueError("'t' must be a number")
    when = None if stamp is None else float(stamp)
    if "close" in record:
        close = record["close"]
        if not isinstance(close, dict):
            raise ValueError("'close' must be an object")
        return Entry(seq, None, None, None, when, close)
    if "config" in record:
        return Entry(seq, None, None, _decode_config(record["config"]), when)
    step, logs = record["step"], record["logs"]
    if isinstance(step, bool) or not isinstance(step, int) or not isinstance(logs, dict):
        raise ValueError("'step' must be an int and 'logs' an object")
    decoded = {key: _decode_log_value(value) for key, value in logs.items()}
    return Entry(seq, step, decoded, None, when)


def _settled(path: Path) -> int:
    """The watermark of the owner of spill segment ``path`` (0: none beside it)."""
    stem = segment_stem(path.name)
    if stem is None:
        return 0
    try:
        return read_state(state_path(path.parent, stem)).settled
    except (OSError, ValueError):
        return 0


def _entries(path: str | os.PathLike[str]) -> Iterator[Entry]:
    settled = _settled(Path(path))
    with open(path, "rb") as file:
        lines = file.read().split(b"\n")
    last = len(lines) - 1
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            entry = decode_entry(line)
            if entry.seq > settled:
                yield entry
        except (ValueError, KeyError, TypeError) as exc:
            if number - 1 == last:
                # No newline after it: the process was killed while writing this line.
                logger.warning("%s: skipped line %d, cut off while it was written", path, number)
                return
            raise InvalidInputError(
                f"{path}, line {number}: not a gradewire spill record ({exc}); pass a file "
                "written by BackgroundSink (DeliveryReport.spill_path)"
            ) from None


def read_spill(path: str | os.PathLike[str]) -> list[StepLogs]:
    """Read back the steps a `BackgroundSink` kept on disk, to replay them by hand.

    Args:
        path: A spill file, e.g. ``DeliveryReport.spill_path`` after `BackgroundSink.close`.

    Returns:
        ``(step, logs)`` pairs in the order they were logged, with `Table` values and
        non-finite floats restored exactly; ``sink.log_many(read_spill(path))`` or
        ``for step, logs in read_spill(path): sink.log(logs, step)`` delivers them.
        Configs in the file are left out: `read_spill_configs` returns them. Entries its
        owner already delivered (up to the watermark in the ``<stem>.owner.json`` beside
        it) are left out too. ``gradewire sync`` replays a whole spill directory into
        its tracker, which is safer by hand: it skips files a live process still delivers.

    Raises:
        InvalidInputError: A line is not a spill record (a last line cut off by a crash is
            skipped with a warning instead).
        OSError: The file cannot be read.
    """
    return [(e.step, e.logs) for e in _entries(path) if e.logs is not None and e.step is not None]


def read_spill_configs(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Read back the configs (`BackgroundSink.log_config` calls) kept in a spill file, in order.

    Raises:
        InvalidInputError: A line is not a spill record.
        OSError: The file cannot be read.
    """
    return [e.config for e in _entries(path) if e.config is not None]
