"""SpillStore: what a `BackgroundSink` keeps on disk, in its spill directory.

The pending entries it could not deliver yet, oldest first, and the entries the wrapped
sink refused for good (`SetAside`). Only the worker thread uses them, with the shared lock
released: no file is touched while `log()` could be waiting for the lock.

Pending entries are always the ones on disk (oldest) followed by the ones in memory, so the
disk holds one run of sequence numbers, appended in order to *segments*
(``<stem>.part-000001.jsonl``, ...). Delivery reads them back from the first; a segment
whose entries are all settled (delivered, set aside or lost) is removed.

**Owners.** The store owns its files (see `_owner`): before its first segment it takes the
lock ``<stem>.lock`` and writes the owner file ``<stem>.owner.json`` (the delivery target
and the watermark). Each time entries on disk are settled it writes the new watermark
(atomically, fsynced) before removing a segment, so a process killed at any moment leaves
a watermark that is never ahead of what was delivered and at most one call behind it.

**Adopted owners.** Owners of the same run that no live process holds (a killed process,
a sink closed while its tracker was down) are read first, oldest owner first: their
entries take the sequence numbers before this sink's own, entry ``s`` of an owner whose
watermark was ``w`` becoming ``base + s - w``. Their watermarks are kept up to date in their
own owner files, and once delivered their files are removed (but the set-aside entries).

Durability: every append is whole records or nothing (`AppendFile`), so an entry counts as
spilled only once its line is entirely in the file; a process killed at any moment leaves
only whole lines. A segment is fsynced when the next one starts (every
``segment_records`` entries or ``segment_bytes`` bytes) and at the end, so a power cut
loses at most the newest segment's unsynced tail. Reading skips, with a warning, a line
cut short or garbled from outside; the worker counts the entries that went missing.

**The cap.** The segments this sink writes hold at most ``max_bytes``: an append that would
pass it stores the entries that fit and raises for the rest, as a full disk does, so they
stay in memory and ``when_full`` applies once memory is full (nothing is lost silently).
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import logging
import os
import re
import tempfile
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from gradewire.sinks.background._append_file import AppendFile, SpillDir
from gradewire.sinks.background._owner import (
    OwnerFiles,
    OwnerLock,
    OwnerState,
    lock_path,
    remove_owner,
    state_path,
    write_state,
)
from gradewire.sinks.background._set_aside import SetAside
from gradewire.sinks.background._spill_format import Entry, decode_entry, encode_entry

__all__ = ["SpillStore", "default_spill_dir", "open_spill_store"]

logger = logging.getLogger("gradewire")

_instances = itertools.count()
_TAIL = 1 << 16  # bytes read from the end of a segment to find its last entry


def default_spill_dir() -> Path:
    """``<system temp dir>/gradewire-spill-<uid>``, the default spill directory.

    One per user, so that a new process finds the files a killed one left; made private
    (0700) when gradewire makes it.
    """
    uid = os.getuid() if hasattr(os, "getuid") else os.getpid()
    return Path(tempfile.gettempdir()) / f"gradewire-spill-{uid}"


def open_spill_store(
    sink: object,
    spill_dir: str | os.PathLike[str] | None,
    *,
    max_bytes: int | None = None,
) -> tuple[str, SpillStore]:
    """A new instance's name, ``<Sink>-<n>``, and its spill store (nothing is created yet).

    The files go in ``spill_dir``, or else in `default_spill_dir`.
    """
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", type(sink).__name__)
    number = next(_instances)
    path = default_spill_dir() if spill_dir is None else Path(spill_dir)
    from time import strftime

    stem = f"{name}-{strftime('%Y%m%dT%H%M%S')}-{os.getpid()}-{number}"
    return f"{name}-{number}", SpillStore(
        SpillDir(path, private=spill_dir is None), stem, max_bytes=max_bytes
    )


@dataclass(eq=False)
class _Source:
    """One owner's entries, as this store numbers them: global = local + ``offset``.

    Attributes:
        state: Its owner file as last written (None: this store's own, not written yet).
        offset: Added to its sequence numbers.
        skip: Its own watermark when adopted: its entries up to it are done with.
        last: The last global sequence number it holds (own: grows with each append).
        recorded: The global watermark its owner file says.
        lock: Its lock, while this store holds it.
    """

    state: OwnerState | None
    offset: int
    skip: int
    last: int
    recorded: int
    lock: OwnerLock | None
    own: bool = False
    segments: int = 0  # how many of the store's segments are its own

    def local(self, settled: int) -> int:
        """Its watermark, in its own numbering, once every global entry to ``settled`` is."""
        return max(self.skip, min(settled, self.last) - self.offset)


@dataclass(eq=False)
class _Segment:
    path: Path
    last_seq: int  # global; 0 while empty
    file: AppendFile | None  # set while it is the segment being written
    source: _Source = field(repr=False)


def _last_seq(path: Path) -> int:
    """The sequence number of the last whole entry in a spill segment (0: none)."""
    try:
        with open(path, "rb") as file:
            size = file.seek(0, os.SEEK_END)
            start = max(0, size - _TAIL)
            while True:
                file.seek(start)
                lines = file.read(size - start).split(b"\n")
                if start > 0:
                    lines = lines[1:]  # may start inside a line
                for line in reversed(lines[:-1]):  # whole lines only: each ends in \n
                    with contextlib.suppress(ValueError, KeyError, TypeError):
                        return decode_entry(line).seq
                if start == 0:
                    return 0
                start = max(0, start - _TAIL)
    except OSError:
        return 0


class SpillStore:
    """Ordered spill segments in one directory, this sink's named ``<stem>.*``.

    Attributes:
        aside: The entries set aside, in ``<stem>.rejected.jsonl`` beside the segments.
        last_seq: The newest sequence number on disk (0 before the first spill).
        adopted: Sequence numbers taken by adopted owners (this sink's own start after).
        close_error: Why `merge` could not merge every segment into one file, if it could not.
    """

    def __init__(
        self,
        directory: SpillDir,
        stem: str,
        *,
        segment_records: int = 1000,
        segment_bytes: int = 16 << 20,
        max_bytes: int | None = None,
    ) -> None:
        self.dir = directory
        self.stem = stem
        self.final_path = directory.path / f"{stem}.jsonl"
        self.aside = SetAside(directory, stem)
        self._segment_records = segment_records
        self._segment_bytes = segment_bytes
        self._max_bytes = max_bytes
        self._segments: deque[_Segment] = deque()
        self._number = 0
        self._own = _Source(None, 0, 0, 0, 0, None, own=True)
        self._adopted: list[_Source] = []
        self._target: dict[str, Any] | None = None
        self._closed = False
        self._own_bytes = 0  # bytes in this sink's own segments on disk
        self.last_seq = 0
        self.adopted = 0
        self.close_error: str | None = None
        # Reading: the segment being read (an index into _segments), its file, and the
        # entries read ahead with the offset where each line starts.
        self._read_index = 0
        self._reader: BinaryIO | None = None
        self._buffer: deque[tuple[Entry, _Segment, int]] = deque()

    @property
    def directory(self) -> Path:
        return self.dir.path

    @property
    def own_bytes(self) -> int:
        """Bytes of this sink's own segments now on disk (what ``max_bytes`` caps)."""
        return self._own_bytes

    # -- owners ---------------------------------------------------------------------------

    def adopt(self, owners: list[OwnerFiles]) -> int:
        """Take the entries of ``owners`` (locked by the caller, oldest first) before ours.

        Returns the sequence numbers they take (their entries above their watermarks), so
        that this sink numbers its own entries after them.
        """
        base = self.adopted
        for owner in owners:
            assert owner.lock is not None
            skip = owner.state.settled
            lasts = [_last_seq(path) for path in owner.segments]
            last_local = max([skip, *lasts])
            source = _Source(
                owner.state,
                offset=base - skip,
                skip=skip,
                last=base + last_local - skip,
                recorded=base,
                lock=owner.lock,
            )
            for path, last in zip(owner.segments, lasts, strict=True):
                self._segments.append(_Segment(path, max(last, skip) + source.offset, None, source))
                source.segments += 1
            self._adopted.append(source)
            base = source.last
        self.adopted = self.last_seq = base
        self._own = _Source(None, 0, base, base, base, None, own=True)
        self.discard(0)  # owners with nothing left above their watermark go at once
        return base

    def set_target(self, target: Mapping[str, Any] | None) -> None:
        """The wrapped sink's delivery target changed: say so in the owner file, if any."""
        self._target = dict(target) if target is not None else None
        own = self._own
        if own.state is not None and own.state.target != self._target:
            self._write(own, own.state.moved(target=self._target))

    def mark_closed(self) -> None:
        """`BackgroundSink.close` was called: the owner file says so (a close entry ends it)."""
        self._closed = True
        own = self._own
        if own.state is not None and not own.state.closed:
            self._write(own, own.state.moved(closed=True))

    def _write(self, source: _Source, state: OwnerState) -> None:
        path = state_path(self.directory, state.stem)
        write_state(path, state)
        source.state = state

    def _start_owner(self, first: int) -> None:
        """Before the first segment: take our lock, write our owner file."""
        own = self._own
        self.dir.ensure()
        if own.lock is None:
            own.lock = OwnerLock.take(lock_path(self.directory, self.stem), create=True)
        state = OwnerState.new(self.stem, self._target, first - 1).moved(closed=self._closed)
        if own.state is not None:
            state = own.state.moved(settled=max(own.state.settled, first - 1), target=self._target)
        self._write(own, state)
        own.recorded = state.settled
        self.dir.sync()

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
        path = self.dir.path / f"{self.stem}.part-{self._number:06d}.jsonl"
        tail = _Segment(path, 0, AppendFile(path), self._own)
        self._segments.append(tail)
        self._own.segments += 1
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

    def append(self, entries: list[Entry]) -> int:
        """Append ``entries`` (newer than everything stored) as whole lines.

        Returns how many were stored, from the first: all of them, or the ones within
        ``max_bytes``.

        Raises:
            OSError: None was stored (e.g. the disk is full, or the cap is reached).
        """
        if not entries:
            return 0
        lines = [encode_entry(entry) for entry in entries]
        count = len(lines)
        if self._max_bytes is not None:
            room = self._max_bytes - self._own_bytes
            used = 0
            for i, line in enumerate(lines):
                used += len(line)
                if used > room:
                    count = i
                    break
            if count == 0:
                raise self.cap_error()
        if self._own.segments == 0 or self._own.state is None:
            self._start_owner(entries[0].seq)
        data = b"".join(lines[:count])
        tail = self._tail()
        assert tail.file is not None
        tail.file.append(data, count)
        self._own_bytes += len(data)
        tail.last_seq = self.last_seq = self._own.last = entries[count - 1].seq
        return count

    def cap_error(self) -> OSError:
        """The error of an append that met ``max_bytes``."""
        return OSError(
            errno.ENOSPC,
            f"the spill cap is reached ({self._own_bytes} bytes on disk, "
            f"max_spill_bytes={self._max_bytes})",
        )

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
            entry = self._decode(segment, line)
            if entry is None:
                continue
            source = segment.source
            if entry.seq <= source.skip:
                continue  # its owner had settled it
            if source.offset:
                entry = _renumbered(entry, entry.seq + source.offset)
            if entry.seq > after:
                self._buffer.append((entry, segment, start))
        return [entry for entry, _, _ in list(self._buffer)[:count]]

    def _drop_buffered(self, settled: int) -> None:
        while self._buffer and self._buffer[0][0].seq <= settled:
            self._buffer.popleft()

    def _decode(self, segment: _Segment, line: bytes) -> Entry | None:
        if line.endswith(b"\n"):
            with contextlib.suppress(ValueError, KeyError, TypeError):
                return decode_entry(line)
        elif not segment.source.own:
            # An adopted owner was killed while it wrote this line, so the entry never
            # counted as spilled (its seq is past the owner's last whole one).
            logger.debug("%s ends with a line cut off by a crash; skipped", segment.path)
            return None
        logger.warning(
            "%s holds a line that is cut short or garbled (changed from outside?); skipped",
            segment.path,
        )
        return None

    def discard(self, settled: int) -> None:
        """Record the watermark, then remove the segments whose entries are all settled.

        Each owner whose entries on disk were settled gets its new watermark, durably,
        before any of its segments goes; an adopted owner all delivered loses its files
        (but the set-aside entries).
        """
        self._drop_buffered(settled)
        for source in [*self._adopted, self._own]:
            if source.state is None or source.segments == 0 or settled <= source.recorded:
                continue
            local = source.local(settled)
            if local > source.state.settled:
                self._write(source, source.state.moved(settled=local))
            source.recorded = min(settled, source.last)
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
            with contextlib.suppress(FileNotFoundError):
                if segment.source.own:
                    self._own_bytes -= segment.path.stat().st_size
            segment.path.unlink(missing_ok=True)
            segment.source.segments -= 1
        for source in list(self._adopted):
            if source.segments == 0 and settled >= source.last:
                self._finish_source(source)
        if self._own.segments == 0:
            self._own_bytes = 0

    def _finish_source(self, source: _Source) -> None:
        """An adopted owner is all delivered: remove its owner file, then its lock."""
        self._adopted.remove(source)
        assert source.state is not None
        remove_owner(self.directory, source.state.stem, source.lock)
        source.lock = None

    def _close_reader(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    # -- the end --------------------------------------------------------------------------

    def _head_offset(self, segment: _Segment) -> int:
        """Where the first pending line of ``segment`` starts (call after `discard`)."""
        if self._buffer and self._buffer[0][1] is segment:
            return self._buffer[0][2]
        if self._read_index == self._segments.index(segment) and self._reader is not None:
            return self._reader.tell()  # every line read so far was settled
        return 0

    def merge(self, settled: int) -> list[Path]:
        """Keep this sink's stored entries above ``settled`` in one file; return every file.

        The files are, in order: those of adopted owners not delivered yet, `final_path`
        (``<stem>.jsonl``) and, only if merging failed (e.g. the disk is full), the segments
        that could not be merged into it. Segments are renamed rather than copied where
        possible, so merging needs little free space. Reading goes on from the merged file.
        """
        for segment in self._segments:
            self._seal(segment)
        self.discard(settled)
        adopted = [s for s in self._segments if not s.source.own]
        own = [s for s in self._segments if s.source.own]
        if not own:
            return [s.path for s in adopted]
        head_offset = self._head_offset(own[0])
        self._close_reader()
        self._buffer.clear()
        self._read_index = 0
        final = AppendFile(self.final_path)
        merged: list[_Segment] = []
        try:
            first = own[0]
            if head_offset == 0:
                os.rename(first.path, self.final_path)
            else:  # its head was delivered already: copy the rest
                final.copy_from(first.path, head_offset)
                first.path.unlink()
            merged.append(first)
            for segment in own[1:]:
                final.copy_from(segment.path)
                segment.path.unlink()
                merged.append(segment)
        except OSError as exc:
            self.close_error = f"{type(exc).__name__}: {exc}"
            logger.warning(
                "could not merge the spill segments into %s (%s); the rest stays in %s",
                self.final_path,
                exc,
                ", ".join(str(s.path) for s in own if s not in merged),
            )
        finally:
            with contextlib.suppress(OSError):
                final.close()
            self.dir.sync()
        if not merged and _size(self.final_path) == 0:
            self.final_path.unlink(missing_ok=True)  # a copy that failed left it empty
        rest = [s for s in own if s not in merged]
        segments = list(adopted)
        if merged:
            segments.append(_Segment(self.final_path, merged[-1].last_seq, None, self._own))
        segments += rest
        self._segments = deque(segments)
        self._own.segments = len(segments) - len(adopted)
        self._own_bytes = sum(_size(s.path) for s in segments if s.source.own)
        return [s.path for s in segments]

    def release(self, settled: int) -> None:
        """At the end: record every watermark, let go of every lock.

        Owners all delivered lose their files (ours too, the set-aside entries aside); the
        others keep them, with their watermark, for the next `BackgroundSink` of their run
        or ``gradewire sync``.
        """
        for segment in self._segments:
            self._seal(segment)
        self.discard(settled)
        self._close_reader()
        for source in list(self._adopted):
            if source.lock is not None:
                source.lock.release(remove=False)
                source.lock = None
        own = self._own
        if own.segments == 0:
            if own.state is not None or own.lock is not None:
                remove_owner(self.directory, self.stem, own.lock)
            own.state = None
            own.lock = None
            self.dir.remove_if_empty()
        elif own.lock is not None:
            own.lock.release(remove=False)
            own.lock = None


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _renumbered(entry: Entry, seq: int) -> Entry:
    return Entry(seq, entry.step, entry.logs, entry.config, entry.time, entry.close)
