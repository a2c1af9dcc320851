"""DeliveryReport: what a `BackgroundSink` delivered, and where it kept what it could not."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["DeliveryReport"]


@dataclass(frozen=True)
class DeliveryReport:
    """The delivery state of a `BackgroundSink`, from `flush()` or `close()`.

    An *entry* is one `log()` step or one `log_config()` call.

    Attributes:
        delivered: Entries the wrapped sink accepted.
        pending: Entries not delivered (still queued, on disk, or rejected).
        rejected: Of the pending entries, those the wrapped sink refused for good (it raised
            `InvalidInputError` for that entry alone); they are never retried.
        spill_path: Set by `close()` when ``pending > 0``: the JSONL file that holds every
            undelivered entry, oldest first (read it with `read_spill`). It is never deleted.
            None from `flush()`: while the sink is open, its spill is still in use under
            `BackgroundSink.spill_dir`.
        last_error: The most recent delivery error as ``"Type: message"``, or None if no
            delivery ever failed; a recovered outage leaves it set while ``ok`` is True.
        failed_attempts: Calls to the wrapped sink that raised.
        ok: True when nothing is pending (and, after `close()`, the wrapped sink closed).
    """

    delivered: int
    pending: int
    rejected: int
    spill_path: Path | None
    last_error: str | None
    failed_attempts: int
    ok: bool
