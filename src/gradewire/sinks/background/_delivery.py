"""The delivery side of a `BackgroundSink`: its spill store and worker, set up and stopped.

Also its reports: the `DeliveryReport` of `flush()` and `close()`, the warning when entries
are left undelivered, and the error when the wrapped sink's ``close()`` raised.
"""

from __future__ import annotations

import itertools
import logging
import os
import re
import tempfile
import time
from pathlib import Path

from gradewire.core._errors import SinkError
from gradewire.sinks._sink import Sink
from gradewire.sinks.background._admission import Admission
from gradewire.sinks.background._checks import Options
from gradewire.sinks.background._report import DeliveryReport
from gradewire.sinks.background._spill_store import SpillStore
from gradewire.sinks.background._worker import Worker

__all__ = [
    "delivered",
    "make_report",
    "report_close",
    "spill_store",
    "start_worker",
    "stop_and_report",
]

logger = logging.getLogger("gradewire")

_instances = itertools.count()


def spill_store(sink: Sink, spill_dir: str | os.PathLike[str] | None) -> tuple[str, SpillStore]:
    """A new instance's name, ``<Sink>-<n>``, and its spill store.

    The store is in ``spill_dir``, or else in a directory of its own in the system temp directory.
    """
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", type(sink).__name__)
    number, pid = next(_instances), os.getpid()
    if spill_dir is None:
        directory = Path(tempfile.gettempdir()) / f"gradewire-spill-{pid}-{name}-{number}"
    else:
        directory = Path(spill_dir)
    stem = f"{name}-{time.strftime('%Y%m%dT%H%M%S')}-{pid}-{number}"
    return f"{name}-{number}", SpillStore(directory, stem)


def start_worker(
    sink: Sink, admission: Admission, store: SpillStore, options: Options, *, name: str
) -> Worker:
    """Start the thread ``gradewire-<name>`` that delivers what ``admission`` takes in."""
    worker = Worker(
        sink,
        admission.queue,
        store,
        admission.lock,
        name=f"gradewire-{name}",
        label=f"{type(sink).__name__} behind {admission.owner}",
        batch_size=options.batch_size,
        flush_interval=options.flush_interval,
        initial_retry_delay=options.initial_retry_delay,
        max_retry_delay=options.max_retry_delay,
    )
    worker.start()
    return worker


def delivered(worker: Worker | None) -> int:
    """Entries the wrapped sink accepted (none without a worker: an inactive rank)."""
    return 0 if worker is None else worker.delivered


def make_report(
    worker: Worker | None,
    store: SpillStore,
    logged: int,
    spill_path: Path | None,
    close_ok: bool = True,
) -> DeliveryReport:
    """The delivery state now, of ``logged`` entries (only `close()` passes a ``spill_path``)."""
    # One read: the worker may deliver between two, and the report must add up.
    done = delivered(worker)
    return DeliveryReport(
        delivered=done,
        pending=logged - done,
        rejected=store.rejected,
        spill_path=spill_path,
        last_error=None if worker is None else worker.health.last_error,
        failed_attempts=0 if worker is None else worker.health.failed_attempts,
        ok=logged == done and close_ok,
    )


def stop_and_report(
    worker: Worker, store: SpillStore, admission: Admission, sink: Sink, stop_timeout: float
) -> DeliveryReport:
    """Stop ``worker`` (waiting ``stop_timeout`` at most) and make the final report."""
    worker.stop(stop_timeout)
    if worker.is_alive():
        # The wrapped sink is stuck inside a call: keep the queue on disk, since the
        # worker may never come back; when it does, it finishes the spill file itself.
        with admission.lock:
            worker.spill_queue_unless_finished()
        worker.note_error(
            f"TimeoutError: {type(sink).__name__} did not return from a call within "
            f"{stop_timeout}s of close(); what it holds stays in memory until it returns, "
            f"everything else is on disk in {store.directory}"
        )
    return make_report(
        worker,
        store,
        admission.seq,
        store.final_path if worker.spilled or worker.is_alive() else None,
        close_ok=worker.close_error is None and not worker.is_alive(),
    )


def report_close(
    owner: object, sink: Sink, worker: Worker, report: DeliveryReport, logged: int
) -> None:
    """Warn when ``report`` is not ok; raise `SinkError` when the wrapped sink's close() raised.

    The error has ``report`` as its ``report`` attribute and the sink's error as its cause.
    """
    if not report.ok:
        logger.warning(
            "%r closed with %d of %d entries undelivered (last error: %s); they are kept "
            "in %s: read them back with gradewire.read_spill(path)",
            owner,
            report.pending,
            logged,
            report.last_error,
            report.spill_path,
        )
    if worker.close_error is not None:
        error = SinkError(
            f"{type(sink).__name__}.close() raised {worker.close_error!r}; "
            f"{report.delivered} entries were delivered, {report.pending} are pending"
            + (f" in {report.spill_path}" if report.spill_path else "")
        )
        error.report = report  # type: ignore[attr-defined]
        raise error from worker.close_error
