"""Spill owners: the BackgroundSink, alive or gone, whose files in a spill directory share a stem.

A `BackgroundSink` that writes to disk owns these files, all named ``<stem>.*``:

- ``<stem>.part-000001.jsonl``, ... and, after `BackgroundSink.close`, ``<stem>.jsonl``: the
  entries not delivered yet, oldest first (``<stem>.jsonl`` holds the oldest).
- ``<stem>.rejected.jsonl``: the entries the wrapped sink refused for good.
- ``<stem>.lock``: locked (``fcntl.flock``, exclusive) by the process that delivers the
  entries, for as long as it does. The kernel releases the lock when that process dies,
  however it dies, so a lock that can be taken means that nobody delivers them any more.
  A forked child closes its copy (`os.register_at_fork`), so a DataLoader worker that
  outlives its parent does not keep the parent's files.
- ``<stem>.owner.json``: the owner file. Who wrote the entries (pid, host, start time), for
  which run (the wrapped sink's *delivery target*), and the *watermark*: every entry up to
  sequence number ``settled`` is delivered, set aside or counted lost. It is replaced
  atomically (a new file, fsynced, renamed over the old) before any segment is removed, so
  a process killed at any moment leaves a watermark that is never ahead of the truth.

Two delivery targets are the same run when their ``kind`` and ``run`` are equal and
``run`` is known (an MLflow run: ``{"tracking_uri": ..., "run_id": ...}``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # Windows: no flock, so no owner can be proven gone and none is adopted
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "OWNER_SUFFIX",
    "OwnerFiles",
    "OwnerLock",
    "OwnerState",
    "adopt_orphans",
    "describe_target",
    "find_owners",
    "lock_path",
    "owner_segments",
    "probe_owner",
    "read_state",
    "remove_owner",
    "same_run",
    "segment_stem",
    "state_path",
    "sweep",
    "take_owner",
    "temporary",
    "write_state",
]

logger = logging.getLogger("gradewire")

OWNER_SUFFIX = ".owner.json"
_LOCK_SUFFIX = ".lock"
_FORMAT = 1
_PART = re.compile(r"\.part-(\d{6,})\.jsonl$")


def same_run(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> bool:
    """Whether two delivery targets name one run (both known, same ``kind`` and ``run``)."""
    if a is None or b is None or a.get("run") is None:
        return False
    return a.get("kind") == b.get("kind") and a.get("run") == b.get("run")


@dataclass(frozen=True)
class OwnerState:
    """What ``<stem>.owner.json`` holds.

    Attributes:
        stem: The owner's stem.
        pid: The process that wrote the entries.
        host: Its host name.
        started: When that owner started (Unix time); owners of one run replay in this order.
        target: The wrapped sink's delivery target when last known (None: not known yet).
        settled: The watermark: every entry up to this sequence number is done with.
        closed: Whether `BackgroundSink.close` was called (its last entry is then a close).
    """

    stem: str
    pid: int
    host: str
    started: float
    target: dict[str, Any] | None = None
    settled: int = 0
    closed: bool = False

    @classmethod
    def new(cls, stem: str, target: Mapping[str, Any] | None, settled: int) -> OwnerState:
        return cls(
            stem=stem,
            pid=os.getpid(),
            host=socket.gethostname(),
            started=time.time(),
            target=dict(target) if target is not None else None,
            settled=settled,
        )

    def to_json(self) -> bytes:
        record = {"v": _FORMAT, **self.__dict__}
        return json.dumps(record, allow_nan=False, sort_keys=True).encode()

    def moved(self, **changes: Any) -> OwnerState:
        return replace(self, **changes)


def read_state(path: Path) -> OwnerState:
    """The owner file at ``path``.

    Raises:
        OSError: It cannot be read.
        ValueError: It is not a gradewire owner file.
    """
    record = json.loads(path.read_bytes())
    if not isinstance(record, dict) or record.get("v") != _FORMAT:
        raise ValueError(f"not a version-{_FORMAT} gradewire owner file")
    target = record.get("target")
    values = (record.get("stem"), record.get("pid"), record.get("started"), record.get("settled"))
    stem, pid, started, settled = values
    if (
        not isinstance(stem, str)
        or not isinstance(pid, int)
        or not isinstance(started, int | float)
        or not isinstance(settled, int)
        or not (target is None or isinstance(target, dict))
    ):
        raise ValueError("missing or mistyped fields")
    return OwnerState(
        stem=stem,
        pid=pid,
        host=str(record.get("host", "")),
        started=float(started),
        target=target,
        settled=settled,
        closed=bool(record.get("closed", False)),
    )


def write_state(path: Path, state: OwnerState) -> None:
    """Replace the owner file at ``path`` atomically and durably.

    Raises:
        OSError: It could not be written; the old file, if any, is unchanged.
    """
    staged = path.with_name(path.name + ".tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(staged, flags, 0o644)
    try:
        data = state.to_json()
        written = 0
        while written < len(data):
            written += os.write(fd, data[written:])
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(staged, path)


# -- locks ------------------------------------------------------------------------------------

_held: set[int] = set()  # lock descriptors of this process, closed in forked children
_fork_hook = False


def _close_in_child() -> None:
    # The parent still holds each lock through its own descriptor; the child lets go.
    for fd in list(_held):
        with contextlib.suppress(OSError):
            os.close(fd)
    _held.clear()


class OwnerLock:
    """The exclusive lock on ``<stem>.lock``, held while this process delivers that owner."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    @classmethod
    def take(cls, path: Path, *, create: bool) -> OwnerLock | None:
        """Lock ``path`` without waiting; None if another live process holds it (or it is gone).

        ``create``: make the file if it does not exist (a new owner); an adopter passes
        False, so that it never brings back the lock of an owner that just finished.
        """
        global _fork_hook
        if fcntl is None:
            return None
        flags = os.O_RDWR | getattr(os, "O_CLOEXEC", 0) | (os.O_CREAT if create else 0)
        try:
            fd = os.open(path, flags, 0o644)
        except FileNotFoundError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            # The owner may have removed its files between our open and our lock: the lock is
            # then on a file no longer there, which protects nothing.
            if os.stat(path).st_ino != os.fstat(fd).st_ino:
                raise FileNotFoundError(path)
        except OSError:
            os.close(fd)
            return None
        if not _fork_hook:
            os.register_at_fork(after_in_child=_close_in_child)
            _fork_hook = True
        _held.add(fd)
        return cls(path, fd)

    def release(self, *, remove: bool) -> None:
        """Let go of the lock; ``remove``: delete the lock file first (the owner is done)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        if remove:
            with contextlib.suppress(OSError):
                self.path.unlink()
        _held.discard(fd)
        os.close(fd)


def lock_path(directory: Path, stem: str) -> Path:
    return directory / f"{stem}{_LOCK_SUFFIX}"


def state_path(directory: Path, stem: str) -> Path:
    return directory / f"{stem}{OWNER_SUFFIX}"


def temporary(directory: Path, stem: str) -> Path:
    """Where `write_state` writes an owner file before renaming it into place."""
    return directory / f"{stem}{OWNER_SUFFIX}.tmp"


def remove_owner(directory: Path, stem: str, lock: OwnerLock | None) -> None:
    """An owner is all delivered: its owner file goes first, then its lock (and a leftover)."""
    with contextlib.suppress(OSError):
        state_path(directory, stem).unlink()
    temporary(directory, stem).unlink(missing_ok=True)
    if lock is not None:
        lock.release(remove=True)


# -- finding owners ---------------------------------------------------------------------------


@dataclass
class OwnerFiles:
    """One owner found in a spill directory.

    Attributes:
        state: Its owner file.
        segments: Its files of pending entries, oldest first.
        rejected: Its file of set-aside entries, if any.
        lock: The lock, if this process took it (`find_owners` with ``lock=True``).
        live: Whether another live process holds the lock (None: not checked).
    """

    state: OwnerState
    directory: Path
    segments: list[Path] = field(default_factory=list)
    rejected: Path | None = None
    lock: OwnerLock | None = None
    live: bool | None = None

    @property
    def stem(self) -> str:
        return self.state.stem

    @property
    def state_path(self) -> Path:
        return state_path(self.directory, self.stem)

    def files(self) -> list[Path]:
        """Every file of this owner but the set-aside entries, which stay."""
        return [*self.segments, self.state_path, lock_path(self.directory, self.stem)]


def segment_stem(name: str) -> str | None:
    """The stem of a file of pending entries named ``name`` (None: not one)."""
    match = _PART.search(name)
    if match is not None:
        return name[: match.start()]
    if name.endswith(".jsonl") and not name.endswith(".rejected.jsonl"):
        return name[: -len(".jsonl")]
    return None


def owner_segments(directory: Path, stem: str) -> list[Path]:
    """The files of pending entries of ``stem``, oldest first."""
    parts: list[tuple[int, Path]] = []
    prefix = f"{stem}.part-"
    with os.scandir(directory) as listing:
        for item in listing:
            if item.name.startswith(prefix):
                match = _PART.search(item.name)
                if match is not None:
                    parts.append((int(match.group(1)), Path(item.path)))
    merged = directory / f"{stem}.jsonl"
    head = [merged] if merged.is_file() else []
    return head + [path for _, path in sorted(parts)]


def find_owners(directory: Path, *, skip: str | None = None) -> list[OwnerFiles]:
    """Every owner with an owner file in ``directory``, oldest first (none if no directory).

    Unreadable owner files are skipped with a WARNING: they are not gradewire's to guess at.
    ``skip``: a stem to leave out (the caller's own).
    """
    if not directory.is_dir():
        return []
    owners: list[OwnerFiles] = []
    for path in sorted(directory.glob(f"*{OWNER_SUFFIX}")):
        stem = path.name[: -len(OWNER_SUFFIX)]
        if stem == skip:
            continue
        try:
            state = read_state(path)
        except FileNotFoundError:
            continue  # its owner just finished
        except (OSError, ValueError) as exc:
            logger.warning("%s is not a readable gradewire owner file (%s); left alone", path, exc)
            continue
        if state.stem != stem:
            logger.warning("%s names another stem (%r); left alone", path, state.stem)
            continue
        rejected = directory / f"{stem}.rejected.jsonl"
        owners.append(
            OwnerFiles(
                state=state,
                directory=directory,
                segments=owner_segments(directory, stem),
                rejected=rejected if rejected.is_file() else None,
            )
        )
    owners.sort(key=lambda owner: (owner.state.started, owner.stem))
    return owners


def _lock(owner: OwnerFiles) -> OwnerLock | None:
    path = lock_path(owner.directory, owner.stem)
    lock = OwnerLock.take(path, create=False)
    if lock is None and not path.exists() and owner.state_path.exists():
        # Its owner file without its lock file (removed by hand): an owner that finishes
        # removes its owner file first, so this one is not finishing.
        lock = OwnerLock.take(path, create=True)
    return lock


def take_owner(owner: OwnerFiles) -> bool:
    """Lock ``owner`` for this process and read its files again under the lock.

    False if a live process holds it, or it finished meanwhile (its files are gone).
    """
    lock = _lock(owner)
    if lock is None:
        owner.live = owner.state_path.exists()
        return False
    try:
        owner.state = read_state(owner.state_path)  # the last watermark its owner wrote
    except (OSError, ValueError):
        lock.release(remove=False)
        owner.live = False
        return False
    owner.segments = owner_segments(owner.directory, owner.stem)
    owner.lock = lock
    owner.live = False
    return True


def probe_owner(owner: OwnerFiles) -> None:
    """Set ``owner.live`` (whether a live process holds its lock) without keeping the lock."""
    lock = _lock(owner)
    if lock is None:
        owner.live = owner.state_path.exists()
        return
    lock.release(remove=False)
    owner.live = False


def sweep(directory: Path) -> None:
    """Remove the lock files that no owner file goes with and no live process holds.

    A process killed while it started an owner (between its lock and its owner file), or
    while it removed one (between the two), leaves such a lock, and maybe the temporary
    file of an owner file it was writing; there is nothing else of that owner to keep.
    """
    if not directory.is_dir():
        return
    for path in directory.glob(f"*{_LOCK_SUFFIX}"):
        stem = path.name[: -len(_LOCK_SUFFIX)]
        if state_path(directory, stem).exists():
            continue
        lock = OwnerLock.take(path, create=False)
        if lock is None:
            continue  # alive: it is starting, or finishing
        if not state_path(directory, stem).exists():
            temporary(directory, stem).unlink(missing_ok=True)
            lock.release(remove=True)
        else:
            lock.release(remove=False)


def adopt_orphans(
    directory: Path, target: Mapping[str, Any] | None
) -> tuple[list[OwnerFiles], list[OwnerFiles]]:
    """The owners of ``target``'s run in ``directory`` that no live process holds.

    Returns them locked for this process (oldest first), and the owners of other runs
    that no live process holds.
    """
    sweep(directory)
    mine: list[OwnerFiles] = []
    others: list[OwnerFiles] = []
    for owner in find_owners(directory):
        if same_run(owner.state.target, target):
            if take_owner(owner):
                mine.append(owner)
        else:
            probe_owner(owner)
            if owner.live is False and owner.segments:
                others.append(owner)
    return mine, others


def describe_target(target: Mapping[str, Any] | None) -> str:
    """A delivery target in a few words, for messages."""
    if target is None:
        return "an unknown target"
    run = target.get("run")
    kind = str(target.get("kind", "a sink"))
    if isinstance(run, Mapping):
        where = ", ".join(f"{key}={value}" for key, value in sorted(run.items()))
        return f"{kind} run ({where})"
    return f"{kind} (run not created yet)"
