"""DeliveryReport: what a `BackgroundSink` delivered, and where it kept what it could not."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["DeliveryReport", "Rejection", "describe"]


def describe(error: BaseException) -> str:
    """An error as ``"Type: message"``, as the delivery report shows it."""
    return f"{type(error).__name__}: {error}"


@dataclass(frozen=True)
class Rejection:
    """One entry the wrapped sink refused for good, as a `DeliveryReport` lists it.

    Attributes:
        step: The step of the refused `log()` call, or None for a `log_config()` call.
        error: Why, as ``"Type: message"``.
    """

    step: int | None
    error: str


@dataclass(frozen=True)
class DeliveryReport:
    """The delivery state of a `BackgroundSink`, from `flush()` or `close()`.

    An *entry* is one `log()` step or one `log_config()` call (or one an earlier process
    left for the same run, see ``adopted``). Every entry is either delivered or pending,
    and after `close()` every pending entry is in exactly one place: set aside in
    ``rejected_path``, lost (counted, with the reason), or waiting in ``spill_paths``
    (``pending == rejected + lost + entries in the spill files``; with ``deferred_close``,
    the worker goes on delivering them, so the files shrink and go).

    Attributes:
        delivered: Entries the wrapped sink accepted.
        pending: Entries not delivered (queued, on disk, set aside or lost).
        rejected: Of the pending entries, those set aside for good: the wrapped sink raised
            `InvalidInputError` for that entry alone, or it kept failing while the entries
            after it went through (see ``max_attempts``). They are never retried.
        spill_path: Set by `close()` when entries wait on disk: the JSONL file that holds
            them, oldest first (read it with `read_spill`). It is removed once they are
            delivered: by this sink's worker while the process lives (``deferred_close``),
            else by the next `BackgroundSink` of the same run or ``gradewire sync``. None
            from `flush()`: while the sink is open, its spill is in use under `spill_dir`.
        last_error: The most recent delivery error as ``"Type: message"``, or None if no
            delivery ever failed; a recovered outage leaves it set while ``ok`` is True.
        failed_attempts: Calls to the wrapped sink that raised.
        ok: True when nothing is pending (and, after `close()`, the wrapped sink closed).
        lost: Of the pending entries, those kept nowhere: logged while memory was full
            (``max_queue``) and the spill file could not be written (``when_full=
            "drop_newest"``), cut from a spill file from outside, or still in memory at
            `close()` with the disk unwritable. Never silent: ``lost_reason`` says why, and
            a WARNING was logged when it happened.
        lost_reason: Why the most recent loss happened, or None.
        rejected_path: After `close()`, the file of the set-aside entries (spill records with
            an ``error`` field; `read_spill` reads them), or None if there are none.
        rejections: The set-aside entries (the first 1000), oldest first, with their errors.
        spill_paths: After `close()`, every file that holds waiting entries, in order:
            those left by earlier processes and not delivered yet, ``spill_path``, and, if
            merging the segments into it failed (a full disk), the segments left unmerged.
        adopted: Entries that earlier processes left on disk for the same run (killed, or
            closed while the tracker was down), which this sink took over and delivers
            before its own; they count in ``delivered`` and ``pending`` like its own.
        deferred_close: `close()` returned with entries pending (the tracker was down, or a
            call hung): the wrapped sink is closed only after them, by the worker, which
            goes on delivering in the background while the process lives. `flush()` after
            `close()` waits for it; ``report`` is replaced by the final one when it is done.
    """

    delivered: int
    pending: int
    rejected: int
    spill_path: Path | None
    last_error: str | None
    failed_attempts: int
    ok: bool
    lost: int = 0
    lost_reason: str | None = None
    rejected_path: Path | None = None
    rejections: tuple[Rejection, ...] = ()
    spill_paths: tuple[Path, ...] = ()
    adopted: int = 0
    deferred_close: bool = False
