"""SetAside: the entries a tracker refused for good, kept in a file of the spill directory."""

from __future__ import annotations

import logging
from pathlib import Path

from gradewire.sinks.background._append_file import AppendFile, SpillDir
from gradewire.sinks.background._report import Rejection
from gradewire.sinks.background._spill_format import Entry, encode_entry

__all__ = ["MAX_LISTED", "SetAside"]

logger = logging.getLogger("gradewire")

MAX_LISTED = 1000
"""Most rejections a `DeliveryReport` lists one by one (the count and the file hold all)."""


class SetAside:
    """Refused entries: counted, listed (the first `MAX_LISTED`), written to ``path``.

    The file ``<stem>.rejected.jsonl`` holds spill records with one more field, ``error``;
    `gradewire.sinks.read_spill` reads it. An entry that cannot be written yet (the disk is
    full) is kept in memory and written with the next one, or at `close`.
    """

    def __init__(self, directory: SpillDir, stem: str) -> None:
        self._dir = directory
        self.path = directory.path / f"{stem}.rejected.jsonl"
        self._file = AppendFile(self.path)
        self.count = 0
        self.listed: list[Rejection] = []
        self.unsaved: list[tuple[Entry, str]] = []
        self.lost = 0
        self.error: str | None = None

    def add(self, entry: Entry, error: str) -> None:
        self.count += 1
        if len(self.listed) < MAX_LISTED:
            self.listed.append(Rejection(step=entry.step, error=error))
        self.unsaved.append((entry, error))

    def save(self) -> bool:
        """Write what is not on disk yet; False (and `error` set) if that failed."""
        if not self.unsaved:
            return True
        data = b"".join(encode_entry(entry, error=error) for entry, error in self.unsaved)
        try:
            self._dir.ensure()
            self._file.append(data, len(self.unsaved))
        except OSError as exc:
            self.error = f"{type(exc).__name__}: {exc}"
            return False
        self.unsaved.clear()
        self.error = None
        return True

    def close(self) -> Path | None:
        """Save what is left (what cannot be saved counts as `lost`); the file, if any."""
        if not self.save():
            self.lost += len(self.unsaved)
            logger.error(
                "%d refused entries could not be written to %s (%s) and are lost",
                len(self.unsaved),
                self.path,
                self.error,
            )
            self.unsaved.clear()
        try:
            self._file.close()
        except OSError as exc:
            logger.warning("could not fsync %s: %s", self.path, exc)
        return self.path if self._file.records else None
