"""Read an offline W&B run back: the ``.wandb`` record log and the media files next to it.

Written from the format description and checked against wandb 0.31.0 (the version the
``gradewire-wandb`` distribution pins); a later wandb may change the layout.

The ``.wandb`` file is a leveldb-style log: a 7-byte header (``:W&B``, magic 0xBEE1
little-endian, a version byte), then 32 KiB blocks (the header counts towards the first)
of chunks ``[crc u32][length u16][type u8][data]``, all little-endian. The CRC is the
standard CRC-32 of the type byte and the data. A record fits in one FULL chunk or is split
into FIRST, MIDDLE..., LAST; a block tail too short for a chunk header is zero padding.
Each record is a ``wandb.proto.wandb_internal_pb2.Record``.
"""

from __future__ import annotations

import json
import struct
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wandb.proto import wandb_internal_pb2 as pb

from gradewire import Histogram, Table

__all__ = ["Logged", "OfflineRun", "iter_records", "logged", "read_run", "run_dirs"]

_BLOCK = 32 * 1024
_CHUNK_HEADER = struct.Struct("<IHB")
_FULL, _FIRST, _MIDDLE, _LAST = 1, 2, 3, 4


def iter_records(path: Path) -> Iterator[Any]:  # wandb_internal_pb2.Record (no stubs)
    """Every record of a ``.wandb`` file, in order; a torn last record is left out."""
    data = path.read_bytes()
    if data[:4] != b":W&B" or data[4:6] != b"\xe1\xbe":
        raise ValueError(f"{path} is not a W&B run file (header {data[:7]!r})")
    pos, parts = 7, bytearray()
    while pos + _CHUNK_HEADER.size <= len(data):
        room = _BLOCK - pos % _BLOCK
        if room < _CHUNK_HEADER.size:
            pos += room  # zero padding at the end of a block
            continue
        crc, length, kind = _CHUNK_HEADER.unpack_from(data, pos)
        start = pos + _CHUNK_HEADER.size
        chunk = data[start : start + length]
        if kind == 0 and length == 0:
            break  # zeros past the last chunk: the file ends here
        if len(chunk) < length or zlib.crc32(bytes([kind]) + chunk) != crc:
            break  # a record cut by a crash
        pos = start + length
        if kind == _FULL:
            parts = bytearray(chunk)
        elif kind == _FIRST:
            parts = bytearray(chunk)
            continue
        else:
            parts += chunk
            if kind == _MIDDLE:
                continue
        record: Any = pb.Record()  # type: ignore[attr-defined]
        record.ParseFromString(bytes(parts))
        yield record


def _items(items: Any) -> dict[str, Any]:
    """Items as a dict; a ``nested_key`` path (0.31 writes media values so) becomes nested dicts."""
    out: dict[str, Any] = {}
    for item in items:
        path = [item.key] if item.key else list(item.nested_key)
        where = out
        for part in path[:-1]:
            where = where.setdefault(part, {})
        where[path[-1]] = json.loads(item.value_json)
    return out


@dataclass
class OfflineRun:
    """What an offline run stored.

    Attributes:
        path: The run folder (``.../wandb/offline-run-<time>-<id>``).
        history: One dict per history row, values decoded from JSON (``_step`` included).
        summary: The summary updates merged in order.
        config: The ``wandb.init`` config, then the config updates, merged in order
            (``_wandb`` left out).
        metrics: The ``define_metric`` records.
        exit_code: The exit record's code (None if the run was not finished).
    """

    path: Path
    history: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    metrics: list[Any] = field(default_factory=list)  # wandb_internal_pb2.MetricRecord
    exit_code: int | None = None

    def media(self, ref: Any) -> Path:
        """The file a media value of a history row (``{"path": ...}``) points to."""
        return self.path / "files" / str(ref["path"])

    def table_json(self, ref: Any) -> dict[str, Any]:
        """The ``{"columns": [...], "data": [[...]]}`` of a logged table."""
        loaded: dict[str, Any] = json.loads(self.media(ref).read_text(encoding="utf-8"))
        return loaded


def read_run(path: Path, *, finished: bool = True, timeout: float = 30.0) -> OfflineRun:
    """Parse the ``run-<id>.wandb`` file of one offline run folder.

    ``run.finish()`` in wandb 0.31 may return before W&B's service has written the run
    file out, so with ``finished=True`` this waits (up to ``timeout`` seconds) until the
    file holds the run's exit record.
    """
    deadline = time.monotonic() + timeout
    while True:
        run = _parse(path)
        if not finished or run.exit_code is not None or time.monotonic() > deadline:
            return run
        time.sleep(0.02)


def _parse(path: Path) -> OfflineRun:
    (file,) = path.glob("run-*.wandb")
    run = OfflineRun(path)
    for record in iter_records(file):
        which = record.WhichOneof("record_type")
        if which == "history":
            run.history.append(_items(record.history.item))
        elif which == "summary":
            run.summary.update(_items(record.summary.update))
        elif which == "run":  # the config given to wandb.init
            run.config.update(_items(record.run.config.update))
        elif which == "config":
            run.config.update(_items(record.config.update))
        elif which == "metric":
            run.metrics.append(record.metric)
        elif which == "exit":
            run.exit_code = record.exit.exit_code
    run.config.pop("_wandb", None)
    return run


def run_dirs(root: Path) -> list[Path]:
    """The offline run folders under ``root`` (W&B's ``dir``), oldest first."""
    return sorted((root / "wandb").glob("offline-run-*"))


@dataclass
class Logged:
    """A run's history as gradewire sees it (see `logged`).

    Attributes:
        steps: ``(step, logs)`` per history row: numbers as floats, tables as `Table`
            (an incremental table: the rows that step added), histograms as `Histogram`.
        html: ``(step, key, page)`` for every HTML page, read as UTF-8 text.
    """

    steps: list[tuple[int, dict[str, float | Table | Histogram]]] = field(default_factory=list)
    html: list[tuple[int, str, str]] = field(default_factory=list)


def logged(run: OfflineRun, step_key: str = "_step") -> Logged:
    """Numbers, tables and HTML pages per row, keyed by ``step_key`` (W&B's or a metric).

    Rows without ``step_key`` (another writer's, in a shared run) are left out.
    """
    out = Logged()
    for row in run.history:
        if step_key not in row:
            continue
        step = int(row[step_key])
        logs: dict[str, float | Table | Histogram] = {}
        for key, value in row.items():
            if key.startswith("_") or key == step_key:
                continue
            kind = value.get("_type") if isinstance(value, dict) else None
            if kind in ("table-file", "incremental-table-file"):
                logs[key] = Table.from_dict(run.table_json(value))
            elif kind == "histogram":
                logs[key] = Histogram(tuple(value["bins"]), tuple(value["values"]))
            elif kind == "html-file":
                out.html.append((step, key, run.media(value).read_text(encoding="utf-8")))
            else:
                logs[key] = float(value)
        out.steps.append((step, logs))
    return out
