"""SpillStore: the files where a `BackgroundSink` keeps entries it could not deliver yet.

The pending entries of a BackgroundSink are always, oldest first: the *segments* on disk
(replayed from the first), the worker's batch in hand, the in-memory queue, then the
*overflow* file. Two writers keep that order without waiting on each other:

- the producer appends to the overflow file when the queue is full (and keeps doing so
  until the worker adopts the file, so the queue never holds newer entries than it);
- the worker appends to the last segment, and, when the queue is empty, adopts the
  overflow file by renaming it into the next segment.

Overflow methods are called under the BackgroundSink's lock; segment methods only from its
worker thread. Writes are flushed to the operating system but not fsynced: a killed process
keeps them, a power cut may not.
"""

from __future__ import annotations

import contextlib
import shutil
from collections import deque
from pathlib import Path
from typing import BinaryIO

from gradewire.sinks.background._spill_format import Entry, decode_entry, encode_entry

__all__ = ["SpillStore"]


class SpillStore:
    """Ordered spill segments plus an overflow file, all named ``<stem>.*.jsonl`` in one dir."""

    def __init__(self, directory: Path, stem: str) -> None:
        self.directory = directory
        self.final_path = directory / f"{stem}.jsonl"
        self._stem = stem
        self._made_dir = False
        self._segments: deque[Path] = deque()
        self._segment_number = 0
        self._tail: BinaryIO | None = None
        self._reader: BinaryIO | None = None
        self._peeked: deque[Entry] = deque()
        self._backlog = 0
        self._overflow_path = directory / f"{stem}.overflow.jsonl"
        self._overflow: BinaryIO | None = None
        self._overflow_count = 0
        self._rejected_path = directory / f"{stem}.rejected.jsonl"
        self._rejected: BinaryIO | None = None
        self.rejected = 0

    @property
    def backlog(self) -> int:
        """Entries in the segments, not yet delivered."""
        return self._backlog

    @property
    def overflow_count(self) -> int:
        """Entries in the overflow file, not yet adopted."""
        return self._overflow_count

    def _open(self, path: Path) -> BinaryIO:
        if not self.directory.is_dir():
            self.directory.mkdir(parents=True, exist_ok=True)
            self._made_dir = True
        return open(path, "ab")  # kept open across calls, closed by the store

    # -- producer side, under the BackgroundSink's lock --------------------------------------

    def write_overflow(self, entry: Entry) -> None:
        """Append ``entry`` to the overflow file."""
        line = encode_entry(entry)
        if self._overflow is None:
            self._overflow = self._open(self._overflow_path)
        self._overflow.write(line)
        self._overflow.flush()
        self._overflow_count += 1

    def adopt_overflow(self) -> None:
        """Make the overflow file the newest segment (call only when the queue is empty)."""
        if self._overflow is None:
            return
        self._overflow.close()
        self._overflow = None
        self._close_tail()
        segment = self._next_segment_path()
        self._overflow_path.rename(segment)
        self._segments.append(segment)
        self._backlog += self._overflow_count
        self._overflow_count = 0

    # -- worker side ------------------------------------------------------------------------

    def _next_segment_path(self) -> Path:
        self._segment_number += 1
        return self.directory / f"{self._stem}.part-{self._segment_number:06d}.jsonl"

    def _close_tail(self) -> None:
        if self._tail is not None:
            self._tail.close()
            self._tail = None

    def append(self, entries: list[Entry]) -> None:
        """Append ``entries`` (newer than everything stored) to the last segment."""
        if not entries:
            return
        data = b"".join(encode_entry(entry) for entry in entries)
        if self._tail is None:
            if not self._segments:
                self._segments.append(self._next_segment_path())
            self._tail = self._open(self._segments[-1])
        self._tail.write(data)
        self._tail.flush()
        self._backlog += len(entries)

    def reject(self, entry: Entry) -> None:
        """Keep an entry the sink refused for good, apart from those still to be retried."""
        if self._rejected is None:
            self._rejected = self._open(self._rejected_path)
        self._rejected.write(encode_entry(entry))
        self._rejected.flush()
        self.rejected += 1

    def peek(self, count: int) -> list[Entry]:
        """The oldest ``count`` (or fewer) entries of the backlog, read in one chunk."""
        while len(self._peeked) < count and self._segments:
            if self._reader is None:
                self._reader = open(self._segments[0], "rb")  # noqa: SIM115
            line = self._reader.readline()
            if line:
                self._peeked.append(decode_entry(line))
                continue
            in_use = len(self._segments) == 1 and self._tail is not None
            if in_use or self._peeked:
                # Reached what the worker has written so far, or the end of a file whose
                # peeked entries are not delivered yet: the file stays until they are.
                break
            self._reader.close()
            self._reader = None
            self._segments.popleft().unlink()
        return list(self._peeked)[:count]

    def advance(self, count: int) -> None:
        """Forget the oldest ``count`` peeked entries: they were delivered."""
        for _ in range(count):
            self._peeked.popleft()
        self._backlog -= count
        if self._backlog == 0:
            # Nothing is left on disk: drop the files so that the next outage starts afresh.
            if self._reader is not None:
                self._reader.close()
                self._reader = None
            self._close_tail()
            while self._segments:
                self._segments.popleft().unlink(missing_ok=True)

    def consolidate(self) -> Path | None:
        """Put every stored entry into `final_path`, oldest first; None if nothing is stored.

        Call after the last `append` and `adopt_overflow`. Rejected entries come first (they
        are older than anything still pending); the other files are removed.
        """
        self._close_tail()
        if self._rejected is not None:
            self._rejected.close()
            self._rejected = None
        if self._backlog == 0 and self.rejected == 0:
            self._remove_dir_if_empty()
            return None
        with open(self.final_path, "xb") as out:
            if self.rejected:
                with open(self._rejected_path, "rb") as rejected:
                    shutil.copyfileobj(rejected, out)
                self._rejected_path.unlink()
            out.writelines(encode_entry(entry) for entry in self._peeked)
            self._peeked.clear()
            first = True
            while self._segments:
                segment = self._segments.popleft()
                if first and self._reader is not None:
                    shutil.copyfileobj(self._reader, out)  # the rest, past what was replayed
                    self._reader.close()
                    self._reader = None
                else:
                    with open(segment, "rb") as file:
                        shutil.copyfileobj(file, out)
                segment.unlink()
                first = False
        return self.final_path

    def _remove_dir_if_empty(self) -> None:
        if self._made_dir:
            # Not empty: it holds other files, which are not ours to remove.
            with contextlib.suppress(OSError):
                self.directory.rmdir()
