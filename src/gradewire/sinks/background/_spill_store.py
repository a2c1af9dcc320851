"""SpillStore: what a `BackgroundSink` keeps on disk, in its spill directory.

The pending entries it could not deliver yet, oldest first, and the entries the wrapped
sink refused for good (`SetAside`). Only the worker thread uses them.

Pending entries are always the ones on disk (oldest) followed by the ones in memory, so the
disk holds one run of sequence numbers, appended in order to *segments*
(``<stem>.part-000001.jsonl``, ...). Delivery reads them back from the first; a segment
whose entries are all settled (delivered or set aside) is removed.

Durability: every append is whole records or nothing (`AppendFile`), so an entry counts as
spilled only once its line is entirely in the file; a process killed at any moment leaves
only whole lines. A segment is fsynced when the next one starts (every
``segment_records`` entries or ``segment_bytes`` bytes) and at `close`, so a power cut
loses at most the newest segment's unsynced tail. Reading skips, with a warning, a line
cut short or garbled from outside; the worker counts the entries that went missing.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import re
import tempfile
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from gradewire.sinks.background._append_file import AppendFile, SpillDir
from gradewire.sinks.background._report import Rejection
from gradewire.sinks.background._spill_format import Entry, decode_entry, encode_entry

__all__ = ["MAX_LISTED", "SetAside", "SpillStore", "open_spill_store"]

logger = logging.getLogger("gradewire")

MAX_LISTED = 1000
"""Most rejections a `DeliveryReport` lists one by one (the count and the file hold all)."""

_instances = itertools.count()


def open_spill_store(
    sink: object, spill_dir: str | os.PathLike[str] | None
) -> tuple[str, SpillStore]:
    """A new instance's name, ``<Sink>-<n>``, and its spill store (nothing is created yet).

    The files go in ``spill_dir``, or else in a directory of its own in the system temp
    directory.
    """
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", type(sink).__name__)
    number, pid = next(_instances), os.getpid()
    if spill_dir is None:
        path = Path(tempfile.gettempdir()) / f"gradewire-spill-{pid}-{name}-{number}"
    else:
        path = Path(spill_dir)
    stem = f"{name}-{time.strftime('%Y%m%dT%H%M%S')}-{pid}-{number}"
    return f"{name}-{number}", SpillStore(SpillDir(path), stem)


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


@dataclass
class _Segment:
    path: Path
    last_seq: int  # 0 while empty
    file: AppendFile | None  # set while it is the segment being written


class SpillStore:
    """Ordered spill segments in one directory, all named ``<stem>.*.jsonl``.

    Attributes:
        aside: The entries set aside, in ``<stem>.rejected.jsonl`` beside the segments.
        last_seq: The newest sequence number on disk (0 before the first spill).
        close_error: Why `close` could not merge every segment into one file, if it could not.
    """

    def __init__(
        self,
        directory: SpillDir,
        stem: str,
        *,
        segment_records: int = 1000,
        segment_bytes: int = 16 << 20,
    ) -> None:
        self.dir = directory
        self.final_path = directory.path / f"{stem}.jsonl"
        self.aside = SetAside(directory, stem)
        self._stem = stem
        self._segment_records = segment_records
        self._segment_bytes = segment_bytes
        self._segments: deque[_Segment] = deque()
        self._number = 0
        self.last_seq = 0
        self.close_error: str | None = None
        # Reading: the segment being read (an index into _segments), its file, and the
        # entries read ahead with the offset where each line starts.
        self._read_index = 0
        self._reader: BinaryIO | None = None
        self._buffer: deque[tuple[Entry, _Segment, int]] = deque()

    @property
    def directory(self) -> Path:
        return self.dir.path

    # -- writing --------------------------------------------------------------------------

    def _tail(self) -> _Segment:
        tail = self._segments[-1] if self._segments else None
        if tail is not None and tail.file is not None:
            file = tail.file
            full = file.records >= self._segment_records or file.size >= self._segment_bytes
            if file.intact() and not full:
                return tail
            self._seal(tail)
        self.dir.ensure()
        self._number += 1
        path = self.dir.path / f"{self._stem}.part-{self._number:06d}.jsonl"
        tail = _Segment(path, 0, AppendFile(path))
        self._segments.append(tail)
        return tail

    def _seal(self, segment: _Segment) -> None:
        file, segment.file = segment.file, None
        if file is None:
            return
        try:
            file.close()
        except OSError as exc:  # the data was written; only its durability is in doubt
            logger.warning("could not fsync spill segment %s: %s", file.path, exc)
        self.dir.sync()

    def append(self, entries: list[Entry]) -> None:
        """Append ``entries`` (newer than everything stored) as whole lines.

        Raises:
            OSError: Nothing was stored (e.g. the disk is full); the caller keeps them.
        """
        if not entries:
            return
        data = b"".join(encode_entry(entry) for entry in entries)
        tail = self._tail()
        assert tail.file is not None
        tail.file.append(data, len(entries))
        tail.last_seq = self.last_seq = entries[-1].seq

    # -- reading --------------------------------------------------------------------------

    def read(self, after: int, count: int) -> list[Entry]:
        """The oldest ``count`` (or fewer) stored entries with a sequence number above ``after``.

        Raises:
            OSError: A segment could not be read (the caller tries again later).
        """
        self._drop_buffered(after)
        while len(self._buffer) < count and self._read_index < len(self._segments):
            segment = self._segments[self._read_index]
            if self._reader is None:
                self._reader = open(segment.path, "rb")  # noqa: SIM115  # kept across calls
            start = self._reader.tell()
            line = self._reader.readline()
            if not line:
                if segment.file is not None:
                    break  # all that was written so far
                self._reader.close()
                self._reader = None
                self._read_index += 1
                continue
            entry = self._decode(segment.path, line)
            if entry is not None and entry.seq > after:
                self._buffer.append((entry, segment, start))
        return [entry for entry, _, _ in list(self._buffer)[:count]]

    def _drop_buffered(self, settled: int) -> None:
        while self._buffer and self._buffer[0][0].seq <= settled:
            self._buffer.popleft()

    def _decode(self, path: Path, line: bytes) -> Entry | None:
        if line.endswith(b"\n"):
            with contextlib.suppress(ValueError, KeyError, TypeError):
                return decode_entry(line)
        logger.warning(
            "%s holds a line that is cut short or garbled (changed from outside?); skipped",
            path,
        )
        return None

    def discard(self, settled: int) -> None:
        """Remove the segments whose entries are all settled (up to ``settled``)."""
        self._drop_buffered(settled)
        while self._segments and self._segments[0].last_seq <= settled:
            segment = self._segments.popleft()
            if self._read_index == 0:
                self._close_reader()
            else:
                self._read_index -= 1
            if segment.file is not None:
                with contextlib.suppress(OSError):
                    segment.file.close()
                segment.file = None
            segment.path.unlink(missing_ok=True)

    def _close_reader(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    # -- the end --------------------------------------------------------------------------

    def _head_offset(self) -> int:
        """Where the first pending line of the first segment starts (call after `discard`)."""
        first = self._segments[0]
        if self._buffer and self._buffer[0][1] is first:
            return self._buffer[0][2]
        if self._read_index == 0 and self._reader is not None:
            return self._reader.tell()  # every line read so far was settled
        return 0

    def close(self, settled: int) -> list[Path]:
        """Keep every stored entry above ``settled`` in one file if possible; return the files.

        The files are, in order: `final_path` (``<stem>.jsonl``) and, only if merging failed
        (e.g. the disk is full), the segments that could not be merged into it. Segments
        are renamed rather than copied where possible, so merging needs little free space.
        """
        for segment in self._segments:
            self._seal(segment)
        self.discard(settled)
        if not self._segments:
            self._close_reader()
            self.dir.remove_if_empty()
            return []
        head_offset = self._head_offset()
        self._close_reader()
        self._buffer.clear()
        final = AppendFile(self.final_path)
        try:
            first = self._segments[0]
            if head_offset == 0:
                os.rename(first.path, self.final_path)
            else:  # its head was delivered already: copy the rest
                final.copy_from(first.path, head_offset)
                first.path.unlink()
            self._segments.popleft()
            while self._segments:
                final.copy_from(self._segments[0].path)
                self._segments.popleft().path.unlink()
        except OSError as exc:
            self.close_error = f"{type(exc).__name__}: {exc}"
            logger.warning(
                "could not merge the spill segments into %s (%s); the rest stays in %s",
                self.final_path,
                exc,
                ", ".join(str(s.path) for s in self._segments),
            )
        finally:
            with contextlib.suppress(OSError):
                final.close()
            self.dir.sync()
        paths = [self.final_path] if self.final_path.exists() else []
        if paths and self.final_path.stat().st_size == 0 and self._segments:
            self.final_path.unlink()
            paths = []
        return paths + [segment.path for segment in self._segments]
