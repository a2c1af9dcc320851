"""AppendFile: a file that only ever holds whole records; each append is all or nothing."""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

__all__ = ["AppendFile", "SpillDir"]

_CHUNK = 1 << 20


class SpillDir:
    """The spill directory: made when first needed, removed at the end if it was ours and empty.

    ``private``: a directory gradewire chose itself in a shared place (the system temp
    directory): made readable by its user only, and refused if another user owns it.
    """

    def __init__(self, path: Path, *, private: bool = False) -> None:
        self.path = path
        self._private = private
        self._made = False
        self._checked = False

    def ensure(self) -> None:
        """Create the directory (and its parents) if it does not exist yet.

        Raises:
            OSError: It cannot be made, or (``private``) another user owns it.
        """
        if not self.path.is_dir():
            self.path.mkdir(parents=True, exist_ok=True, mode=0o700 if self._private else 0o777)
            self._made = True
        if self._private and not self._checked and hasattr(os, "getuid"):
            owner = self.path.stat().st_uid
            if owner != os.getuid():
                raise OSError(
                    errno.EPERM,
                    f"{self.path} belongs to another user (uid {owner}); pass spill_dir= a "
                    "directory of yours",
                )
            self._checked = True

    def sync(self) -> None:
        """Make the names of the files created in it durable (a power cut keeps them)."""
        with contextlib.suppress(OSError):  # not every filesystem can fsync a directory
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def remove_if_empty(self) -> None:
        if self._made:
            with contextlib.suppress(OSError):  # not empty: the other files are not ours
                self.path.rmdir()


class AppendFile:
    """An append-only file of whole records (JSON lines).

    An append either writes all of its bytes or, on any error (a full disk, a file size
    limit, an I/O error), cuts the file back to where it was and raises: no append ever
    leaves half a record for the next one to join onto. If the file's size is not what this
    object wrote (it was cut or written from outside, or cutting back failed), `damaged` is
    set and nothing more is appended: the owner starts a new file.

    Attributes:
        size: Bytes of whole records in the file.
        records: Records appended (by this object).
        damaged: The file can no longer be trusted to end on a record boundary.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.size = 0
        self.records = 0
        self.damaged = False
        self._fd: int | None = None

    def _open(self) -> int:
        if self._fd is None:
            flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
            self._fd = os.open(self.path, flags, 0o644)
            self.size = os.fstat(self._fd).st_size
        return self._fd

    def intact(self) -> bool:
        """Whether the file still ends where this object's last append did."""
        if self.damaged:
            return False
        if self._fd is not None:
            try:
                self.damaged = os.fstat(self._fd).st_size != self.size
            except OSError:
                self.damaged = True
        return not self.damaged

    def _check(self, fd: int) -> None:
        if self.damaged or os.fstat(fd).st_size != self.size:
            self.damaged = True
            raise OSError(errno.EIO, f"{self.path} was changed from outside; not appending to it")

    def _cut_back(self, fd: int, size: int) -> None:
        try:
            os.ftruncate(fd, size)
        except OSError:
            self.damaged = True

    def append(self, data: bytes, records: int) -> None:
        """Append ``data`` (``records`` whole lines) entirely, or raise with the file unchanged.

        Raises:
            OSError: Nothing was appended (the file is as it was, or `damaged` is set).
        """
        fd = self._open()
        self._check(fd)
        view = memoryview(data)
        written = 0
        try:
            while written < len(data):
                written += os.write(fd, view[written:])
        except BaseException:
            if written:
                self._cut_back(fd, self.size)
            raise
        self.size += len(data)
        self.records += records

    def copy_from(self, source: Path, offset: int = 0) -> None:
        """Append the bytes of ``source`` from ``offset`` (whole records), or none of them.

        Raises:
            OSError: Nothing was appended.
        """
        fd = self._open()
        self._check(fd)
        start = self.size
        try:
            with open(source, "rb") as file:
                file.seek(offset)
                while chunk := file.read(_CHUNK):
                    view = memoryview(chunk)
                    written = 0
                    while written < len(chunk):
                        written += os.write(fd, view[written:])
                    self.size += len(chunk)
        except BaseException:
            self.size = start
            self._cut_back(fd, start)
            raise

    def sync(self) -> None:
        """Flush the file to the disk itself (fsync), so that a power cut keeps it."""
        if self._fd is not None:
            os.fsync(self._fd)

    def close(self) -> None:
        """Fsync and close; an fsync error is raised after the file is closed."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
