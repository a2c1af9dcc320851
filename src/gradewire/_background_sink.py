"""BackgroundSink: deliver to any sink from a worker thread, so a training step never waits."""

from __future__ import annotations

import atexit
import functools
import itertools
import logging
import math
import os
import queue
import re
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gradewire._base_sink import check_config, check_logs, check_step
from gradewire._delivery_report import DeliveryReport
from gradewire._delivery_worker import Worker
from gradewire._errors import InvalidInputError, InvalidTypeError, SinkError
from gradewire._fanout_sink import FanOutSink
from gradewire._grader import LogValue
from gradewire._sink import Logs, Sink, StepLogs
from gradewire._spill_format import Entry, copy_table, snapshot_config
from gradewire._spill_store import SpillStore
from gradewire._table import Table

__all__ = ["BackgroundSink"]

logger = logging.getLogger("gradewire")

_instances = itertools.count()


_Item = tuple[int | None, dict[str, LogValue] | None, dict[str, Any] | None]
"""What `_put` takes: (step, logs, None) for a step, (None, None, config) for a config."""


def _step_entry(step: object, logs: object) -> _Item:
    checked = check_logs(logs)
    for key, value in checked.items():
        if isinstance(value, Table):
            checked[key] = copy_table(value)  # so that the caller may keep changing it
    return check_step(step), checked, None


def _check_seconds(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidTypeError(f"{name} must be a number of seconds, not {type(value).__name__}")
    if not value >= 0 or math.isinf(value):
        raise InvalidInputError(f"{name} must be a finite number of seconds >= 0, not {value}")
    return float(value)


def _check_count(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidTypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < 1:
        raise InvalidInputError(f"{name} must be at least 1, not {value}")
    return value


def _close_at_exit(sink: BackgroundSink, timeout: float) -> None:
    try:
        sink._close(timeout, timeout)
    except SinkError:
        logger.exception("closing %r at interpreter exit failed", sink)


class BackgroundSink:
    """Wrap any sink so that `log()` only enqueues and a worker thread does the delivering.

    A training step never waits on a tracker: `log()` snapshots the logs (tables are
    copied) and puts them on a bounded in-memory queue. If the queue is full, the entry is
    appended to a local spill file from the caller's thread instead: nothing is dropped and
    nothing touches the network. One daemon worker thread, named ``gradewire-<Sink>-<n>``,
    takes entries in batches (up to ``batch_size``, or what arrived within
    ``flush_interval``) and hands them to the wrapped sink: ``sink.log_many(batch)`` when
    the sink has it, else ``sink.log(logs, step)`` per step, and ``sink.log_config`` for
    configs. **The wrapped sink is only ever called from that worker thread** (`close()`
    too), so it needs no locking of its own.

    When a call raises (any `Exception`), the worker retries with exponential backoff and
    full jitter (a random wait in ``[0, min(max_retry_delay, initial_retry_delay * 2**n)]``).
    Meanwhile the failed entries and everything logged after them go to a spill file
    (strict JSON lines, see `read_spill`) under ``spill_dir``, so memory stays bounded however
    long the tracker is away. Retries send one entry per call (a probe); once one
    succeeds, the spill is replayed in chunks read from disk before any newer entry, and
    removed when it is empty. If the wrapped sink raises `InvalidInputError` for a single
    entry, that entry can never succeed: it is set aside (kept for the final spill file,
    counted in `DeliveryReport.rejected`) instead of blocking everything behind it.

    Guarantees:
        - **Order**: entries reach the wrapped sink in the order `log()`/`log_config()`
          were called, outage or not. `log()` refuses a step lower than the last one (as
          every gradewire sink does), so that is step order, stable for equal steps: the
          spill is replayed in it without re-sorting, one chunk in memory at a time. A
          config is delivered before every step logged after it.
        - **No loss**: once `close()` returns, every entry was delivered or is in the file
          ``report.spill_path``. Until then an entry is in memory (at most ``max_queue`` in
          the queue and ``batch_size`` in the worker's hands) or on disk; a normal exit runs
          the `atexit` hook below. A killed process (SIGKILL, ``os._exit``) loses what was
          in memory; what was on disk stays in ``spill_dir`` as ``<stem>.*.jsonl`` files,
          readable with `read_spill` (a file being replayed may still hold a few entries
          that were already delivered).
        - **Duplicates**: exactly once for a sink whose calls are all-or-nothing (one HTTP
          request per call, as MLflow's ``log_batch``). In general at-least-once: an entry
          can be sent twice only if it was part of a call that raised after the sink had
          already passed it on. The first call after any failure carries one entry, and a
          sink without ``log_many`` is always called one entry at a time, so only the entry
          whose call raised can be re-sent; with ``log_many``, a call carries at most
          ``batch_size`` entries, so a failure re-sends at most that many. Use
          ``batch_size=1`` where even that is unacceptable (at the cost of one call per step).

    Ranks: if the wrapped sink has a bool attribute ``active`` that is False (a non-zero
    rank), no worker starts and `log`/`log_config`/`flush`/`close` do nothing, the wrapped
    sink included (logging after `close()` still raises `SinkError`, as on rank 0).

    Process exit: unless ``exit_timeout=None``, each instance registers (in ``__init__``,
    not at import) an `atexit` hook that closes it, giving delivery and then the wrapped
    sink's close ``exit_timeout`` seconds each, so a script that forgets `close()` still
    delivers or spills what is pending. `close()` unregisters it (until then the hook keeps
    the instance alive).

    Example:
        >>> with BackgroundSink(sink, spill_dir="spill") as background:  # doctest: +SKIP
        ...     background.log(grader.get_logs(clear=True), step)
        >>> background.report.ok  # doctest: +SKIP
        True
    """

    def __init__(
        self,
        sink: Sink,
        *,
        max_queue: int = 10_000,
        batch_size: int = 100,
        flush_interval: float = 0.5,
        spill_dir: str | os.PathLike[str] | None = None,
        initial_retry_delay: float = 0.5,
        max_retry_delay: float = 30.0,
        close_timeout: float = 30.0,
        exit_timeout: float | None = 5.0,
    ) -> None:
        """Start the worker (unless the wrapped sink is inactive on this rank).

        Args:
            sink: Any `Sink`; it is called only from the worker thread from now on.
            max_queue: Entries held in memory before `log()` spills to disk.
            batch_size: Most entries per ``log_many`` call.
            flush_interval: Seconds the worker waits for a batch to fill before sending.
            spill_dir: Directory for spill files (created when first needed; several
                BackgroundSinks may share it). Default: ``gradewire-spill-<pid>-<Sink>-<n>``
                in the system temp directory. The path is in every warning.
            initial_retry_delay: Backoff scale in seconds for the first retry (> 0).
            max_retry_delay: Cap on any single backoff wait, in seconds.
            close_timeout: Seconds `close()` waits for delivery by default, and at most for
                the worker to finish (spill file written, wrapped sink closed).
            exit_timeout: Seconds the `atexit` hook gives `close()`; None registers no hook.

        Raises:
            InvalidTypeError: ``sink`` lacks ``log``/``log_config``/``close``, or an option
                has the wrong type.
            InvalidInputError: An option is out of range.
        """
        if not isinstance(sink, Sink):
            raise InvalidTypeError(
                f"BackgroundSink wraps a sink with log(), log_config() and close(), not "
                f"{type(sink).__name__}"
            )
        if isinstance(sink, FanOutSink):
            # FanOutSink logs and swallows its sinks' errors, so nothing would ever be
            # retried or spilled: the delivery guarantee would silently not hold.
            raise InvalidInputError(
                "BackgroundSink(FanOutSink(...)) cannot retry a failing tracker: FanOutSink "
                "swallows its sinks' errors. Wrap each tracker instead: "
                "FanOutSink(BackgroundSink(a), BackgroundSink(b))"
            )
        if spill_dir is not None and not isinstance(spill_dir, str | os.PathLike):
            raise InvalidTypeError(
                f"spill_dir must be a path (str or pathlib.Path) or None, not "
                f"{type(spill_dir).__name__}"
            )
        self._max_queue = _check_count("max_queue", max_queue)
        batch = _check_count("batch_size", batch_size)
        interval = _check_seconds("flush_interval", flush_interval)
        retry = _check_seconds("initial_retry_delay", initial_retry_delay)
        cap = _check_seconds("max_retry_delay", max_retry_delay)
        if retry <= 0 or cap < retry:
            raise InvalidInputError(
                f"need 0 < initial_retry_delay <= max_retry_delay, got {retry} and {cap}"
            )
        self._close_timeout = _check_seconds("close_timeout", close_timeout)
        exit_seconds = (
            None if exit_timeout is None else _check_seconds("exit_timeout", exit_timeout)
        )
        self._sink = sink
        active = getattr(sink, "active", True)
        self._active = not (isinstance(active, bool) and not active)
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", type(sink).__name__)
        number, pid = next(_instances), os.getpid()
        self._name = f"{name}-{number}"
        if spill_dir is None:
            directory = Path(tempfile.gettempdir()) / f"gradewire-spill-{pid}-{name}-{number}"
        else:
            directory = Path(spill_dir)
        stem = f"{name}-{time.strftime('%Y%m%dT%H%M%S')}-{pid}-{number}"
        self._store = SpillStore(directory, stem)
        self._queue: queue.Queue[object] = queue.Queue()  # bounded by log(), see _put
        self._lock = threading.Lock()
        self._closed = False
        self._seq = 0
        self._last_step: int | None = None
        self._report: DeliveryReport | None = None
        self._worker: Worker | None = None
        self._exit_hook: functools.partial[None] | None = None
        if not self._active:
            return
        self._worker = Worker(
            sink,
            self._queue,
            self._store,
            self._lock,
            name=f"gradewire-{self._name}",
            label=f"{type(sink).__name__} behind {self!r}",
            batch_size=batch,
            flush_interval=interval,
            initial_retry_delay=retry,
            max_retry_delay=cap,
        )
        self._worker.start()
        if exit_seconds is not None:
            # A strong reference: an instance dropped without close() still has a running
            # worker and pending entries, which the hook must reach at exit.
            self._exit_hook = functools.partial(_close_at_exit, self, exit_seconds)
            atexit.register(self._exit_hook)

    # -- producer side -----------------------------------------------------------------------

    def log(self, logs: Logs, step: int) -> None:
        """Enqueue one step's logs; never waits on the network.

        The logs are checked and copied first (tables too), so changing them afterwards
        changes nothing that is sent.

        Raises:
            InvalidTypeError: A key, a value or the step has a type a sink cannot take.
            InvalidInputError: The step is negative, or lower than the last one logged
                (gradewire's sinks refuse those, and W&B drops them).
            SinkError: `close()` was called, or the queue is full and the spill file cannot
                be written (the step was not kept: the message says why).
        """
        if not self._active:
            self._check_open()
            return
        self._put([_step_entry(step, logs)])

    def log_many(self, entries: Sequence[StepLogs]) -> None:
        """Enqueue several steps, in order; all are checked before any is enqueued.

        Raises:
            InvalidTypeError: An entry is not a ``(step, logs)`` pair, or has bad values.
            InvalidInputError: A step is negative or lower than the one before it.
            SinkError: As for `log`.
        """
        if not self._active:
            self._check_open()
            return
        checked: list[_Item] = []
        for i, entry in enumerate(entries):
            if not isinstance(entry, tuple | list) or len(entry) != 2:
                raise InvalidTypeError(
                    f"entries[{i}] must be a (step, logs) pair, not {type(entry).__name__}"
                )
            try:
                checked.append(_step_entry(entry[0], entry[1]))
            except InvalidInputError as exc:
                raise type(exc)(f"entries[{i}]: {exc}") from None
        self._put(checked)

    def log_config(self, config: Mapping[str, Any]) -> None:
        """Enqueue the run's configuration; it is delivered before every later step.

        The config is copied into plain JSON shapes (tuples become lists), which is what the
        wrapped sink receives, so it can be kept on disk while the tracker is down.

        Raises:
            InvalidTypeError: ``config`` is not a mapping with str keys, or holds a value
                that is not a dict, list, str, number, bool or None.
            SinkError: As for `log`.
        """
        if not self._active:
            self._check_open()
            return
        self._put([(None, None, snapshot_config(check_config(config)))])

    def _check_open(self) -> None:
        if self._closed:
            raise SinkError(
                f"{self!r} is closed, so nothing more can be logged to it; log before close(), "
                "or wrap the sink in a new BackgroundSink"
            )

    def _put(self, items: list[_Item]) -> None:
        started_overflow = False
        with self._lock:
            self._check_open()
            last = self._last_step
            for i, (step, _, _) in enumerate(items):
                if step is not None and last is not None and step < last:
                    where = f"entries[{i}]: " if len(items) > 1 else ""
                    raise InvalidInputError(
                        f"{where}step {step} is lower than step {last}, already logged to "
                        f"{self!r}; steps must not decrease (trackers such as W&B drop lower "
                        "steps): log steps in order, or use a new sink for a new run"
                    )
                last = step if step is not None else last
            for step, logs, config in items:
                entry = Entry(self._seq + 1, step, logs, config)
                # Once anything is in the overflow file, later entries follow it there until the
                # worker adopts the file, so the queue never holds entries newer than the file.
                if self._store.overflow_count == 0 and self._queue.qsize() < self._max_queue:
                    self._queue.put_nowait(entry)
                else:
                    try:
                        self._store.write_overflow(entry)
                    except OSError as exc:
                        raise SinkError(
                            f"the queue of {self._max_queue} entries is full and the spill file "
                            f"in {self.spill_dir} cannot be written ({exc}), so step "
                            f"{step} was NOT kept: free disk space or pass spill_dir= a "
                            "writable directory, or a larger max_queue"
                        ) from exc
                    started_overflow = started_overflow or self._store.overflow_count == 1
                self._seq += 1
                if step is not None:
                    self._last_step = step
        if started_overflow:
            self._queue.put_nowait(Worker.WAKE)  # so that the worker adopts the file soon
            logger.warning(
                "%r: the queue of %d entries is full (the tracker is slower than the training "
                "loop); newer entries go to %s until the worker catches up",
                self,
                self._max_queue,
                self.spill_dir,
            )

    # -- delivery state ----------------------------------------------------------------------

    @property
    def spill_dir(self) -> Path:
        """The directory where entries are kept on disk while the tracker is down."""
        return self._store.directory

    @property
    def wrapped(self) -> Sink:
        """The wrapped sink (do not call it while this BackgroundSink is open)."""
        return self._sink

    @property
    def active(self) -> bool:
        """False when the wrapped sink is inactive on this rank: every call is a no-op."""
        return self._active

    @property
    def closed(self) -> bool:
        """Whether `close()` was called."""
        return self._closed

    @property
    def pending(self) -> int:
        """Entries logged but not delivered yet (approximate while the worker runs)."""
        return self._seq - self.delivered

    @property
    def delivered(self) -> int:
        """Entries the wrapped sink accepted."""
        return 0 if self._worker is None else self._worker.delivered

    @property
    def is_healthy(self) -> bool:
        """Whether the last call to the wrapped sink succeeded (True before the first)."""
        return True if self._worker is None else self._worker.healthy

    @property
    def report(self) -> DeliveryReport | None:
        """The final `DeliveryReport`, set by `close()` (None before)."""
        return self._report

    def _make_report(self, spill_path: Path | None, close_ok: bool = True) -> DeliveryReport:
        worker = self._worker
        pending = self._seq - self.delivered
        return DeliveryReport(
            delivered=self.delivered,
            pending=pending,
            rejected=self._store.rejected,
            spill_path=spill_path,
            last_error=None if worker is None else worker.last_error,
            failed_attempts=0 if worker is None else worker.failed_attempts,
            ok=pending == 0 and close_ok,
        )

    def flush(self, timeout: float | None = None) -> DeliveryReport:
        """Wait until everything logged so far is delivered, or ``timeout`` seconds pass.

        Args:
            timeout: Seconds to wait at most; None waits as long as it takes (which, while
                the tracker is down, is until it comes back).

        Returns:
            The delivery state now; ``ok`` tells whether everything was delivered.
        """
        seconds = None if timeout is None else _check_seconds("timeout", timeout)
        if self._report is not None:
            return self._report
        with self._lock:
            target = self._seq
        if self._worker is not None:
            self._worker.wait_settled(target, seconds)
        return self._make_report(None)

    def close(self, timeout: float | None = None) -> None:
        """Stop accepting logs, deliver what is pending, close the wrapped sink; set `report`.

        Waits up to ``timeout`` seconds (default ``close_timeout``) for delivery. Then the
        worker stops: it finishes the call it is in, writes whatever is still undelivered to
        one spill file (``report.spill_path``) and closes the wrapped sink; that part gets up
        to ``close_timeout`` seconds (``close(timeout=0)`` skips waiting for delivery but
        still writes the spill file). A WARNING is logged (`logging`, logger ``gradewire``)
        when the report is not ok. A second call does nothing.

        Raises:
            SinkError: Only when the wrapped sink's ``close()`` raised; the error has the
                `DeliveryReport` as its ``report`` attribute.
        """
        seconds = None if timeout is None else _check_seconds("timeout", timeout)
        self._close(self._close_timeout if seconds is None else seconds, self._close_timeout)

    def _close(self, delivery_timeout: float, stop_timeout: float) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if self._exit_hook is not None:
            atexit.unregister(self._exit_hook)
            self._exit_hook = None
        worker = self._worker
        if worker is None:
            self._report = self._make_report(None)
            return
        self.flush(delivery_timeout)
        worker.stop(stop_timeout)
        if worker.is_alive():
            # The wrapped sink is stuck inside a call: keep the queue on disk, since the
            # worker may never come back; when it does, it finishes the spill file itself.
            with self._lock:
                worker.spill_queue_unless_finished()
            worker.note_error(
                f"TimeoutError: {type(self._sink).__name__} did not return from a call within "
                f"{stop_timeout}s of close(); what it holds stays in memory until it returns, "
                f"everything else is on disk in {self.spill_dir}"
            )
        report = self._make_report(
            self._store.final_path if worker.spilled or worker.is_alive() else None,
            close_ok=worker.close_error is None and not worker.is_alive(),
        )
        self._report = report
        if not report.ok:
            logger.warning(
                "%r closed with %d of %d entries undelivered (last error: %s); they are kept "
                "in %s: read them back with gradewire.read_spill(path)",
                self,
                report.pending,
                self._seq,
                report.last_error,
                report.spill_path,
            )
        if worker.close_error is not None:
            error = SinkError(
                f"{type(self._sink).__name__}.close() raised {worker.close_error!r}; "
                f"{report.delivered} entries were delivered, {report.pending} are pending"
                + (f" in {report.spill_path}" if report.spill_path else "")
            )
            error.report = report  # type: ignore[attr-defined]
            raise error from worker.close_error

    def __enter__(self) -> BackgroundSink:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"BackgroundSink({self._name})"
