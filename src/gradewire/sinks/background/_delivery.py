"""The delivery side of a `BackgroundSink`: its spill files and worker, set up and stopped.

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
from gradewire.sinks.background._append_file import SpillDir
from gradewire.sinks.background._aside import SetAside
from gradewire.sinks.background._checks import Options
from gradewire.sinks.background._report import DeliveryReport
from gradewire.sinks.background._spill_store import SpillStore
from gradewire.sinks.background._worker import Worker

__all__ = [
    "delivered",
    "make_report",
    "report_close",
    "spill_files",
    "start_worker",
    "stop_and_report",
]

logger = logging.getLogger("gradewire")

_instances = itertools.count()


def spill_files(
    sink: Sink, spill_dir: str | os.PathLike[str] | None
) -> tuple[str, SpillStore, SetAside]:
    """A new instance's name, ``<Sink>-<n>``, its spill store and its file of refused entries.

    They are in ``spill_dir``, or else in a directory of its own in the system temp directory.
    """
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", type(sink).__name__)
    number, pid = next(_instances), os.getpid()
    if spill_dir is None:
        path = Path(tempfile.gettempdir()) / f"gradewire-spill-{pid}-{name}-{number}"
    else:
        path = Path(spill_dir)
    directory = SpillDir(path)
    stem = f"{name}-{time.strftime('%Y%m%dT%H%M%S')}-{pid}-{number}"
    return f"{name}-{number}", SpillStore(directory, stem), SetAside(directory, stem)


def start_worker(
    sink: Sink,
    admission: Admission,
    store: SpillStore,
    aside: SetAside,
    options: Options,
    *,
    name: str,
) -> Worker:
    """Start the threads ``gradewire-<name>`` (calls the sink) and ``gradewire-<name>-spool``."""
    label = f"{type(sink).__name__} behind {admission.owner}"
    worker = Worker(sink, admission, store, aside, options, name=name, label=label)
    worker.start()
    return worker


def delivered(worker: Worker | None) -> int:
    """Entries the wrapped sink accepted (none without a worker: an inactive rank)."""
    return 0 if worker is None else worker.delivered


def make_report(
    worker: Worker | None,
    aside: SetAside,
    admission: Admission,
    *,
    final: bool = False,
) -> DeliveryReport:
    """The delivery state now (``final``: after the worker finished, with the spill files)."""
    # One read: the worker may deliver between two, and the report must add up.
    done = delivered(worker)
    logged = admission.logged
    lost = admission.dropped + (0 if worker is None else worker.ledger.lost)
    reasons = [admission.drop_reason, None if worker is None else worker.ledger.lost_reason]
    paths = tuple(worker.spill_paths) if final and worker is not None else ()
    close_ok = (
        worker is None or not final or (worker.close_error is None and not worker.close_stuck)
    )
    return DeliveryReport(
        delivered=done,
        pending=logged - done,
        rejected=aside.count,
        spill_path=paths[0] if paths else None,
        last_error=None if worker is None else worker.last_error,
        failed_attempts=0 if worker is None else worker.failed_attempts,
        ok=logged == done and close_ok,
        lost=lost,
        lost_reason="; ".join(r for r in reasons if r) or None,
        rejected_path=worker.rejected_path if final and worker is not None else None,
        rejections=tuple(aside.listed),
        spill_paths=paths,
    )


def stop_and_report(
    worker: Worker, aside: SetAside, admission: Admission, stop_timeout: float
) -> DeliveryReport:
    """Stop ``worker`` (a call in progress gets ``stop_timeout``) and make the final report."""
    worker.stop(stop_timeout)
    if worker.is_alive():  # only if the disk itself hangs
        worker.note_error(
            f"TimeoutError: the delivery thread did not finish writing the spill file in "
            f"{worker.spill_directory} after close()"
        )
    return make_report(worker, aside, admission, final=True)


def report_close(
    owner: object, sink: Sink, worker: Worker, report: DeliveryReport, logged: int
) -> None:
    """Warn when ``report`` is not ok; raise `SinkError` when the wrapped sink's close() raised.

    The error has ``report`` as its ``report`` attribute and the sink's error as its cause.
    """
    if not report.ok:
        where = ", ".join(str(p) for p in report.spill_paths) or "no spill file"
        logger.warning(
            "%r closed with %d of %d entries undelivered (%d set aside in %s, %d lost%s; "
            "last error: %s); the rest is kept in %s: read it back with "
            "gradewire.sinks.read_spill(path)",
            owner,
            report.pending,
            logged,
            report.rejected,
            report.rejected_path,
            report.lost,
            f": {report.lost_reason}" if report.lost_reason else "",
            report.last_error,
            where,
        )
    if worker.close_error is not None:
        error = SinkError(
            f"{type(sink).__name__}.close() raised {worker.close_error!r}; "
            f"{report.delivered} entries were delivered, {report.pending} are pending"
            + (f" in {report.spill_path}" if report.spill_path else "")
        )
        error.report = report  # type: ignore[attr-defined]
        raise error from worker.close_error
