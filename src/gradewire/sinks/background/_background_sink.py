"""BackgroundSink: deliver to any sink from a worker thread, so a training step never waits."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gradewire.sinks._base_sink import check_config
from gradewire.sinks._sink import Logs, Sink, StepLogs
from gradewire.sinks.background._admission import Admission
from gradewire.sinks.background._checks import (
    check_options,
    check_seconds,
    step_entries,
    step_entry,
)
from gradewire.sinks.background._delivery import (
    delivered,
    make_report,
    report_close,
    spill_store,
    start_worker,
    stop_and_report,
)
from gradewire.sinks.background._exit import ExitHook, register_exit_hook, unregister_exit_hook
from gradewire.sinks.background._report import DeliveryReport
from gradewire.sinks.background._spill_format import snapshot_config
from gradewire.sinks.background._worker import Worker

__all__ = ["BackgroundSink"]


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
        options = check_options(
            sink,
            spill_dir,
            max_queue=max_queue,
            batch_size=batch_size,
            flush_interval=flush_interval,
            initial_retry_delay=initial_retry_delay,
            max_retry_delay=max_retry_delay,
            close_timeout=close_timeout,
            exit_timeout=exit_timeout,
        )
        self._close_timeout = options.close_timeout
        self._sink = sink
        active = getattr(sink, "active", True)
        self._active = not (isinstance(active, bool) and not active)
        self._name, self._store = spill_store(sink, spill_dir)
        self._admission = Admission(self._store, options.max_queue, repr(self))
        self._report: DeliveryReport | None = None
        self._worker: Worker | None = None
        self._exit_hook: ExitHook | None = None
        if not self._active:
            return
        self._worker = start_worker(sink, self._admission, self._store, options, name=self._name)
        self._exit_hook = register_exit_hook(self, options.exit_timeout)

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
            self._admission.check_open()
            return
        self._admission.put([step_entry(step, logs)])

    def log_many(self, entries: Sequence[StepLogs]) -> None:
        """Enqueue several steps, in order; all are checked before any is enqueued.

        Raises:
            InvalidTypeError: An entry is not a ``(step, logs)`` pair, or has bad values.
            InvalidInputError: A step is negative or lower than the one before it.
            SinkError: As for `log`.
        """
        if not self._active:
            self._admission.check_open()
            return
        self._admission.put(step_entries(entries))

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
            self._admission.check_open()
            return
        self._admission.put([(None, None, snapshot_config(check_config(config)))])

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
        return self._admission.closed

    @property
    def pending(self) -> int:
        """Entries logged but not delivered yet (approximate while the worker runs)."""
        return self._admission.seq - self.delivered

    @property
    def delivered(self) -> int:
        """Entries the wrapped sink accepted."""
        return delivered(self._worker)

    @property
    def is_healthy(self) -> bool:
        """Whether the last call to the wrapped sink succeeded (True before the first)."""
        return True if self._worker is None else self._worker.health.healthy

    @property
    def report(self) -> DeliveryReport | None:
        """The final `DeliveryReport`, set by `close()` (None before)."""
        return self._report

    def flush(self, timeout: float | None = None) -> DeliveryReport:
        """Wait until everything logged so far is delivered, or ``timeout`` seconds pass.

        Args:
            timeout: Seconds to wait at most; None waits as long as it takes (which, while
                the tracker is down, is until it comes back).

        Returns:
            The delivery state now; ``ok`` tells whether everything was delivered.
        """
        seconds = None if timeout is None else check_seconds("timeout", timeout)
        if self._report is not None:
            return self._report
        with self._admission.lock:
            target = self._admission.seq
        if self._worker is not None:
            self._worker.wait_settled(target, seconds)
        return make_report(self._worker, self._store, self._admission.seq, None)

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
        seconds = None if timeout is None else check_seconds("timeout", timeout)
        self._close(self._close_timeout if seconds is None else seconds, self._close_timeout)

    def _close(self, delivery_timeout: float, stop_timeout: float) -> None:
        if not self._admission.close():
            return
        unregister_exit_hook(self._exit_hook)
        self._exit_hook = None
        worker = self._worker
        if worker is None:
            self._report = make_report(None, self._store, self._admission.seq, None)
            return
        self.flush(delivery_timeout)
        report = stop_and_report(worker, self._store, self._admission, self._sink, stop_timeout)
        self._report = report
        report_close(self, self._sink, worker, report, self._admission.seq)

    def __enter__(self) -> BackgroundSink:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"BackgroundSink({self._name})"
