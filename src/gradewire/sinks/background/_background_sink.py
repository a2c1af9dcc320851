"""BackgroundSink: deliver to any sink from a worker thread, so a training step never waits.

Also what the sink says at the end: a warning when entries are left undelivered, the error
when the wrapped sink's ``close()`` raised, and the `atexit` hook that closes a sink which a
script forgot to close.
"""

from __future__ import annotations

import atexit
import functools
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from typing_extensions import Unpack

from gradewire.core._errors import InvalidInputError, InvalidTypeError, SinkError
from gradewire.core._settings import check_seconds_or_none, resolve_settings
from gradewire.sinks._fanout_sink import FanOutSink
from gradewire.sinks._sink import Logs, Sink, StepLogs, check_config
from gradewire.sinks.background._admission import Admission, step_entries, step_entry
from gradewire.sinks.background._owner import OwnerFiles, adopt_orphans, describe_target
from gradewire.sinks.background._report import DeliveryReport
from gradewire.sinks.background._settings import DeliveryOptions, DeliverySettings
from gradewire.sinks.background._spill_format import snapshot_config
from gradewire.sinks.background._spill_store import open_spill_store
from gradewire.sinks.background._worker import Worker

__all__ = ["BackgroundSink"]

logger = logging.getLogger("gradewire")


class BackgroundSink:
    """Wrap any sink so that `log()` only enqueues and worker threads do the delivering.

    `log()` snapshots the logs (tables are copied) into memory (at most ``max_queue``
    entries). A worker thread, ``gradewire-<Sink>-<n>-spool``, batches them (up to
    ``batch_size``, or what arrived within ``flush_interval``) for a second thread,
    ``gradewire-<Sink>-<n>``, which calls the wrapped sink: ``log_many(batch)`` when it has
    it, else ``log(logs, step)`` per step, and ``log_config`` for configs. **The wrapped sink
    is only ever called from that one thread** (`close()` too), and the worker stays free
    while a call hangs. The settings named below (``max_queue``, ``flush_interval``, ...) are
    the fields of `DeliverySettings`, given as keywords or whole as ``settings=``.

    **Outages.** When a call raises (any `Exception`) or has not returned after
    ``stall_timeout`` (a tracker client retrying for minutes on its own, a server that never
    answers), the sink counts as down: memory, the hanging call's entries included, goes to
    spill files (strict JSON lines, see `read_spill`) in ``spill_dir``, and so does what is
    logged after, every ``flush_interval``. Retries back off exponentially with full jitter
    (a random wait in ``[0, min(max_retry_delay, initial_retry_delay * 2**n)]``) and carry
    one entry (a probe); once one succeeds the spill is replayed, oldest first, and removed.
    An entry is written whole or not at all and leaves memory only once delivered or
    written; spill segments are fsynced as the next one starts and at `close()`. The spill
    files hold at most ``max_spill_bytes``; past it the disk counts as full (below).

    **Owners and adoption.** The files of one sink are its own: a lock (``fcntl.flock``)
    held while its process lives, and an owner file with its *delivery target* (the run,
    from the wrapped sink's optional ``delivery_target()``) and its *watermark*, the last
    entry delivered, written atomically before any spill segment is removed. A new sink
    whose wrapped sink names the same run (an ``MlflowSink(run_id=...)`` of that run, same
    tracking URI), in the same ``spill_dir``, takes over the files that no live process
    holds, those of a killed process or of a sink closed during an outage, and delivers
    them first, oldest owner first, from their watermarks (``report.adopted``). A spill of
    another run is never delivered into this one (a WARNING names ``gradewire sync`` for
    it), and two live processes never take each other's files.

    **Closing.** `close()` closes the wrapped sink after the entries logged before it. If
    they cannot all be delivered in time (the tracker is down, a call hangs), `close()`
    returns with ``report.deferred_close``: what is left is on disk, ending with the close,
    and the worker goes on while the process lives, then closes the wrapped sink (an
    ``MlflowSink`` ends its run with the status it would have had, at the time of the
    close). A process that ends first leaves that to the next sink of the run or to
    ``gradewire sync``. ``deliver_after_close=False`` stops the worker instead.

    **Refusals.** An entry the wrapped sink refuses alone with `InvalidInputError`, or one
    that failed ``max_attempts`` times in a row, fails again, and fails once more right
    after the entry behind it went through, is set aside (``report.rejected_path``,
    ``report.rejections``; never retried) and delivery goes on.

    **A full disk.** Entries that cannot be written (no space, or ``max_spill_bytes``
    reached) stay in memory and are retried; once memory is full too, ``when_full``
    applies to each new entry: ``"drop_newest"`` (counted in ``report.lost`` with the
    reason, and a WARNING), ``"raise"`` (`SinkError` from `log()`) or ``"block"`` (`log()`
    waits). With a writable disk, a full memory only makes `log()` wait for a disk write,
    never for the network.

    Guarantees:
        - **Order**: entries reach the wrapped sink in the order `log()`/`log_config()`
          were called, outage or not (set-aside entries aside), after those adopted. `log()`
          refuses a step lower than the last one, so that is step order, stable for equal
          steps.
        - **Training is not held up**: `log()` checks and copies the logs and takes a lock
          that the worker holds for bookkeeping only, never across a file or network call;
          it waits for a disk write only when memory holds ``max_queue`` entries.
        - **No silent loss**: once `close()` returns, every entry was delivered, or is in
          ``report.spill_paths`` (normally the one ``report.spill_path``), or set aside, or
          counted in ``report.lost`` with the reason. A killed process (SIGKILL) loses what
          was in memory: while the tracker answers, what is not delivered yet; while it is
          down or hanging, what was logged in the last ``flush_interval`` (in the first
          ``stall_timeout`` of an outage: since it began). The rest is delivered by the
          next sink of the same run, or by ``gradewire sync``.
        - **At least once, and once where the tracker can tell**: an entry is sent twice
          only if the call that carried it raised after the wrapped sink passed it on (the
          first call after a failure carries one entry: at most ``batch_size`` entries, 1
          without ``log_many``), or if the process died during that call, before the
          watermark recorded it (at most one call per kill). Each entry carries the time it
          was logged, which a sink with ``log_many_at`` sends: MLflow's SQL stores keep a
          point sent again with the same key, step, value and time once, so with
          ``MlflowSink`` every step is stored exactly once.

    Ranks: if the wrapped sink has a bool attribute ``active`` that is False (a non-zero
    rank), no thread starts and `log`/`log_config`/`flush`/`close` do nothing.

    Process exit: unless ``exit_timeout=None``, each instance registers (in ``__init__``)
    an `atexit` hook that closes it, giving delivery and then the wrapped sink's close
    ``exit_timeout`` seconds each; `close()` unregisters it.

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
        settings: DeliverySettings | None = None,
        _adopt: Sequence[OwnerFiles] | None = None,
        **options: Unpack[DeliveryOptions],
    ) -> None:
        """Start the worker (unless the wrapped sink is inactive on this rank).

        Args:
            sink: Any `Sink`; it is called only from the delivery thread from now on.
            settings: How to queue, batch, retry and spill (default: `DeliverySettings()`).
            **options: `DeliverySettings` fields by name (``max_queue=``, ``spill_dir=``,
                ``when_full=``, ...), each documented there; they override ``settings``.

        Raises:
            InvalidTypeError: ``sink`` lacks ``log``/``log_config``/``close``, or a setting
                has the wrong type.
            InvalidInputError: A setting is out of range, or ``sink`` is a `FanOutSink`.
        """
        # _adopt (gradewire sync): the owners to deliver first, already locked, whatever
        # their run, instead of those of the wrapped sink's run.
        _check_wrapped(sink)
        checked = resolve_settings(DeliverySettings, settings, options)
        self._settings = checked
        self._sink = sink
        active = getattr(sink, "active", True)
        self._active = not (isinstance(active, bool) and not active)
        self._name, self._store = open_spill_store(
            sink, checked.spill_dir, max_bytes=checked.max_spill_bytes
        )
        self._admission = Admission(checked, repr(self), str(self._store.directory))
        target = _delivery_target(sink) if self._active else None
        self._worker = Worker(
            sink, self._admission, self._store, checked, name=self._name, target=target
        )
        self._report: DeliveryReport | None = None
        self._exit_hook: functools.partial[None] | None = None
        if not self._active:
            return
        if _adopt is not None:
            owners = list(_adopt)
        else:
            owners, others = adopt_orphans(self._store.directory, target)
            _warn_other_runs(self._store.directory, others)
        self._admission.start_after(self._store.adopt(owners))
        self._worker.start()
        if checked.exit_timeout is not None:
            # A strong reference: an instance dropped without close() still has a running
            # worker and pending entries, which the hook must reach at exit.
            self._exit_hook = functools.partial(_close_at_exit, self, checked.exit_timeout)
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
            SinkError: `close()` was called, or (with ``when_full="raise"``) memory is full
                and the spill file cannot be written: the step was not kept.
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

        It is copied into plain JSON shapes (tuples become lists), which is what the wrapped
        sink receives, so that it can be kept on disk.

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
    def settings(self) -> DeliverySettings:
        """The settings this sink was made with, checked (``spill_dir`` as a `Path`, or None)."""
        return self._settings

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
        return self._admission.logged - self.delivered

    @property
    def delivered(self) -> int:
        """Entries the wrapped sink accepted."""
        return self._worker.delivered

    @property
    def is_healthy(self) -> bool:
        """Whether the last call succeeded and none is hanging (True before the first)."""
        return self._worker.healthy

    @property
    def report(self) -> DeliveryReport | None:
        """The final `DeliveryReport`, set by `close()` (None before).

        After a deferred close (``report.deferred_close``) it is replaced by the final one
        once the background delivery is done.
        """
        report = self._report
        if report is not None and report.deferred_close and self._worker.finished:
            report = self._report = self._worker.report(final=True)
        return report

    def flush(self, timeout: float | None = None) -> DeliveryReport:
        """Wait until everything logged so far is delivered, or ``timeout`` seconds pass.

        After a `close()` that deferred the wrapped sink's close, waits for the delivery
        that goes on in the background, and for that close.

        Args:
            timeout: Seconds to wait at most; None waits as long as it takes (which, while
                the tracker is down, is until it comes back).

        Returns:
            The delivery state now; ``ok`` tells whether everything was delivered.
        """
        seconds = check_seconds_or_none("timeout", timeout)
        if self._report is not None:
            if self._report.deferred_close:
                self._worker.wait_finished(seconds)
                report = self.report
                assert report is not None
                return report if not report.deferred_close else self._worker.report(final=True)
            return self._report
        with self._admission.lock:
            target = self._admission.seq
        self._worker.wait_settled(target, seconds)
        return self._worker.report()

    def close(self, timeout: float | None = None) -> None:
        """Stop accepting logs, deliver what is pending, close the wrapped sink; set `report`.

        Waits up to ``timeout`` seconds (default ``close_timeout``) for delivery; then up to
        ``close_timeout`` for a call in progress, writes what is undelivered to one spill
        file (``report.spill_path``), and gives the wrapped sink's ``close()`` as long
        again. A WARNING (logger ``gradewire``) says so when the report is not ok. A second
        call does nothing.

        Raises:
            SinkError: Only when the wrapped sink's ``close()`` raised; the error has the
                `DeliveryReport` as its ``report`` attribute.
        """
        seconds = check_seconds_or_none("timeout", timeout)
        stop = self._settings.close_timeout
        self._close(stop if seconds is None else seconds, stop)

    def _close(self, delivery_timeout: float, stop_timeout: float) -> None:
        if not self._admission.close():
            return
        if self._exit_hook is not None:
            atexit.unregister(self._exit_hook)
            self._exit_hook = None
        if not self._active:
            self._report = self._worker.report()
            return
        self.flush(delivery_timeout)
        report = self._report = self._worker.stop(stop_timeout)
        if report.deferred_close:
            logger.warning(
                "%r closed with %d of %d entries undelivered (last error: %s); they are kept "
                "in %s and delivered in the background while this process lives, and then "
                "%s is closed; if the process ends first, the next BackgroundSink of the same "
                "run, or `gradewire sync %s`, delivers them",
                self,
                report.pending,
                self._admission.logged,
                report.last_error,
                ", ".join(str(p) for p in report.spill_paths) or "memory",
                type(self._sink).__name__,
                self._store.directory,
            )
        elif not report.ok:
            where = ", ".join(str(p) for p in report.spill_paths) or "no spill file"
            logger.warning(
                "%r closed with %d of %d entries undelivered (%d set aside in %s, %d lost%s; "
                "last error: %s); the rest is kept in %s for the next BackgroundSink of "
                "the same run, or `gradewire sync` of that folder, to deliver",
                self,
                report.pending,
                self._admission.logged,
                report.rejected,
                report.rejected_path,
                report.lost,
                f": {report.lost_reason}" if report.lost_reason else "",
                report.last_error,
                where,
            )
        failure = self._worker.close_error
        if failure is not None and not report.deferred_close:
            error = SinkError(
                f"{type(self._sink).__name__}.close() raised {failure!r}; "
                f"{report.delivered} entries were delivered, {report.pending} are pending"
                + (f" in {report.spill_path}" if report.spill_path else "")
            )
            error.report = report  # type: ignore[attr-defined]
            raise error from failure

    def __enter__(self) -> BackgroundSink:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"BackgroundSink({self._name})"


def _close_at_exit(sink: BackgroundSink, timeout: float) -> None:
    """The `atexit` hook: give delivery, and then the wrapped sink's close, ``timeout`` each."""
    try:
        sink._close(timeout, timeout)
    except SinkError:
        logger.exception("closing %r at interpreter exit failed", sink)


def _delivery_target(sink: Sink) -> dict[str, Any] | None:
    """The wrapped sink's delivery target now, if it names one (read before its thread starts)."""
    method = getattr(sink, "delivery_target", None)
    if not callable(method):
        return None
    try:
        target = method()
    except Exception:  # a sink's own helper: never let it stop the sink from starting
        logger.debug("delivery_target() of %r raised", sink, exc_info=True)
        return None
    return dict(target) if isinstance(target, Mapping) else None


_warned_dirs: set[Path] = set()


def _warn_other_runs(directory: Path, others: Sequence[OwnerFiles]) -> None:
    """Once per directory: say what other runs left there, and how to deliver it."""
    if not others or directory in _warned_dirs:
        return
    _warned_dirs.add(directory)
    runs = sorted({describe_target(owner.state.target) for owner in others})
    logger.warning(
        "%s holds spill files of %d ended process(es) for other runs (%s); this sink "
        "delivers only those of its own run: deliver them with `gradewire sync %s`",
        directory,
        len(others),
        "; ".join(runs),
        directory,
    )


def _check_wrapped(sink: object) -> None:
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
