"""The MLflow requests of one run: batched log_batch, text artifacts, the table list tag."""

from __future__ import annotations

import json
import logging
import re
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from mlflow import MlflowClient

__all__ = [
    "LOGGED_ARTIFACTS_TAG",
    "MAX_METRICS_PER_BATCH",
    "MAX_PARAMS_PER_BATCH",
    "MAX_PARAM_LENGTH",
    "MAX_TAG_LENGTH",
    "Writer",
    "batches",
]

logger = logging.getLogger("gradewire")

_T = TypeVar("_T")

LOGGED_ARTIFACTS_TAG = "mlflow.loggedArtifacts"
"""The run tag listing table files, which ``mlflow.load_table`` searches."""

MAX_METRICS_PER_BATCH = 1000
"""MLflow's most metrics in one ``log_batch`` request (and most entities in all)."""

MAX_PARAMS_PER_BATCH = 100
"""MLflow's most params, and most tags, in one ``log_batch`` request."""

MAX_PARAM_LENGTH = 6000
"""MLflow's longest param value."""

MAX_TAG_LENGTH = 8000
"""MLflow's longest tag value."""

_PART_NAME = re.compile(r"rows(?:-(\d{4,}))?\.json")

# MLflow refuses a log_batch request body over 1,000,000 bytes; JSON escapes can make a
# character 6 bytes, so batches are cut by an estimate of their encoded size as well.
_MAX_REQUEST_BYTES = 900_000


def encoded_size(*texts: str) -> int:
    """An upper-bound estimate of the bytes ``texts`` take in a JSON request body."""
    return sum(len(json.dumps(text)) for text in texts) + 64


def batches(items: list[_T], sizes: list[int], limit: int) -> Iterator[list[_T]]:
    """``items`` cut in order into lists of at most ``limit`` items and ~900 kB each."""
    batch: list[_T] = []
    used = 0
    for item, size in zip(items, sizes, strict=True):
        if batch and (len(batch) >= limit or used + size > _MAX_REQUEST_BYTES):
            yield batch
            batch, used = [], 0
        batch.append(item)
        used += size
    if batch:
        yield batch


class Writer:
    """Sends to one run; every method is one or more whole requests, nothing kept on failure."""

    def __init__(self, client: MlflowClient, run_id: str) -> None:
        self.client = client
        self.run_id = run_id
        self._listed: set[str] = set()

    def send_metrics(self, points: Sequence[tuple[str, float, int, int]]) -> None:
        """Log ``(key, value, timestamp_ms, step)`` points, one ``log_batch`` per chunk.

        Each chunk is one HTTP request (or one database transaction), all or nothing, since
        none is longer than ``MlflowClient.log_batch`` sends in one go.
        """
        from mlflow.entities import Metric

        metrics = [Metric(key, value, timestamp, step) for key, value, timestamp, step in points]
        sizes = [encoded_size(m.key) for m in metrics]
        for chunk in batches(metrics, sizes, MAX_METRICS_PER_BATCH):
            self.client.log_batch(self.run_id, metrics=chunk, synchronous=True)

    def send_params(self, params: Sequence[tuple[str, str]]) -> None:
        """Log ``(key, value)`` params, 100 per ``log_batch``."""
        from mlflow.entities import Param

        items = [Param(key, value) for key, value in params]
        sizes = [encoded_size(p.key, p.value) for p in items]
        for chunk in batches(items, sizes, MAX_PARAMS_PER_BATCH):
            self.client.log_batch(self.run_id, params=chunk, synchronous=True)

    def send_tags(self, tags: Mapping[str, str]) -> None:
        """Set tags (values cut to MLflow's 8,000 characters), 100 per ``log_batch``."""
        from mlflow.entities import RunTag

        items = [RunTag(key, value[:MAX_TAG_LENGTH]) for key, value in tags.items()]
        sizes = [encoded_size(t.key, t.value) for t in items]
        for chunk in batches(items, sizes, MAX_PARAMS_PER_BATCH):
            self.client.log_batch(self.run_id, tags=chunk, synchronous=True)

    def upload(self, path: str, text: str) -> None:
        """Write ``text`` to the run's artifact ``path`` (replacing a file already there)."""
        self.client.log_text(self.run_id, text, path)

    def list_tables(self, paths: Sequence[str]) -> list[str]:
        """List ``paths`` as tables in the run's ``mlflow.loggedArtifacts`` tag.

        As ``mlflow.log_table`` does; returns the paths that did not fit in the tag. The
        tag is read again first, since the user may log tables to the same run.
        """
        new = [p for p in dict.fromkeys(paths) if p not in self._listed]
        if not new:
            return []
        run = self.client.get_run(self.run_id)
        raw = run.data.tags.get(LOGGED_ARTIFACTS_TAG, "[]")
        try:
            entries = json.loads(raw)
            if not isinstance(entries, list):
                raise ValueError("not a list")
        except ValueError:
            logger.warning(
                "run %s has a %s tag that is not a JSON list (%.80r...); it is left alone, so "
                "mlflow.load_table will not find %s",
                self.run_id,
                LOGGED_ARTIFACTS_TAG,
                raw,
                ", ".join(new),
            )
            self._listed.update(new)
            return []
        full: list[str] = []
        for path in new:
            entry = {"path": path, "type": "table"}
            if entry in entries:
                continue
            # ensure_ascii=False: load_table searches the tag with LIKE on the plain path.
            if len(json.dumps([*entries, entry], ensure_ascii=False)) > MAX_TAG_LENGTH:
                full.append(path)
                continue
            entries.append(entry)
        text = json.dumps(entries, ensure_ascii=False)
        if text != raw:
            self.client.set_tag(self.run_id, LOGGED_ARTIFACTS_TAG, text, synchronous=True)
        self._listed.update(new)
        return full

    def end(self, status: str, end_time: int | None = None) -> None:
        """Mark the run terminated with ``status`` (FINISHED, FAILED, KILLED) at ``end_time`` ms."""
        self.client.set_terminated(self.run_id, status, end_time=end_time)

    def status(self) -> str:
        """The run's status now (RUNNING, FINISHED, ...)."""
        status: str = self.client.get_run(self.run_id).info.status
        return status

    def read_table(self, key: str) -> tuple[int, str] | None:
        """The last part of the JSON table of ``key`` in the run: (its number, its text).

        None if the run has none (a run this sink did not start may have one, written by
        an earlier process).
        """
        parts: dict[int, str] = {}
        for item in self.client.list_artifacts(self.run_id, f"tables/{key}"):
            name = item.path.rsplit("/", 1)[-1]
            match = _PART_NAME.fullmatch(name)
            if match is not None and not item.is_dir:
                parts[int(match.group(1) or 1)] = item.path
        if not parts:
            return None
        part = max(parts)
        with tempfile.TemporaryDirectory(prefix="gradewire-table-") as scratch:
            local = self.client.download_artifacts(self.run_id, parts[part], scratch)
            return part, Path(local).read_text(encoding="utf-8")
