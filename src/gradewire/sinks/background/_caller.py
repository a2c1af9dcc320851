"""Caller: the one thread that calls the wrapped sink, one job at a time.

Keeping the calls on a thread of their own leaves the worker free while a call hangs (a
tracker that retries for minutes inside its own client, a server that accepts connections
and never answers): the worker keeps moving entries to disk meanwhile.

What it calls, besides ``log``/``log_many``/``log_config``, when the wrapped sink has it:

- ``log_many_at(entries, times)``: steps with the time each was logged (Unix seconds), so
  that a tracker can recognise a step it already has when it is sent again (MLflow drops a
  point equal in key, step, value and timestamp);
- ``delivery_target()``: where the sink delivers (a JSON object, see `_owner`), read after
  every job, since a sink may only learn its run on its first write;
- ``replay_close(target, closed_at)``: for a close entry, do to ``target``'s run what the
  ``close()`` of the sink that delivered to it would have done (end the run), as at
  ``closed_at``, if it is not done yet. A close entry of this sink's own then calls its
  ``close()``, once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gradewire.sinks._base_sink import StepOrderError
from gradewire.sinks._sink import Sink, StepLogs
from gradewire.sinks.background._spill_format import Entry

__all__ = ["Caller", "Job", "Outcome"]

logger = logging.getLogger("gradewire")

Target = dict[str, Any]


@dataclass(frozen=True)
class Job:
    """Entries to send in order; ``suspect``: send the first alone, and if it fails the second.

    A suspect job tells a refused entry from an outage: the first entry has failed many
    times, so if it fails again, the entry after it goes through, and the first still
    fails once more after that, it is refused.
    ``stop`` ends the thread instead.
    """

    entries: tuple[Entry, ...] = ()
    suspect: bool = False
    stop: bool = False


@dataclass(frozen=True)
class Outcome:
    """What a job did.

    Attributes:
        done: Entries accepted, counted from the first.
        error: What the call that failed raised (None if all went through).
        call_size: Entries that failed call carried.
        failed_calls: Calls that raised.
        refused: For a suspect job: the first entry failed with this error before and
            after the second went through (``done`` is then 0: the second is accepted,
            the first refused).
        close_error: The wrapped sink's ``close()`` raised this: the close entry is done
            with regardless (``close()`` is called once).
        target: The wrapped sink's delivery target after the job (None: it has none).
    """

    done: int = 0
    error: Exception | None = None
    call_size: int = 0
    failed_calls: int = 0
    refused: Exception | None = None
    close_error: Exception | None = None
    target: Target | None = None


def _all_timed(entries: list[Entry]) -> bool:
    return all(entry.time is not None for entry in entries)


def _method(sink: object, name: str) -> Any:
    method = getattr(sink, name, None)
    return method if callable(method) else None


def _with_target(outcome: Outcome, target: Target | None) -> Outcome:
    return Outcome(
        done=outcome.done,
        error=outcome.error,
        call_size=outcome.call_size,
        failed_calls=outcome.failed_calls,
        refused=outcome.refused,
        close_error=outcome.close_error,
        target=target,
    )


def _step_logs(entry: Entry) -> StepLogs:
    assert entry.step is not None
    assert entry.logs is not None
    return entry.step, entry.logs


class Caller:
    """Runs `Job`s on one daemon thread; the outcome is published under the shared lock.

    Attributes:
        busy_since: `time.monotonic` when the job being run started, None when idle.
        outcome: The outcome of the last job, until the worker takes it.
    """

    def __init__(
        self, sink: Sink, lock: threading.Lock, done: threading.Condition, name: str, stem: str
    ) -> None:
        self._sink = sink
        self._log_many: Callable[[Sequence[StepLogs]], Any] | None = _method(sink, "log_many")
        self._log_many_at: Callable[[Sequence[StepLogs], Sequence[float]], Any] | None = _method(
            sink, "log_many_at"
        )
        self._replay_close: Callable[[Target | None, float], Any] | None = _method(
            sink, "replay_close"
        )
        self._target_of: Callable[[], Mapping[str, Any] | None] | None = _method(
            sink, "delivery_target"
        )
        self._stem = stem
        self._closed = False  # the wrapped sink's close() was called
        self._lock = lock
        self._jobs_ready = threading.Condition(lock)
        self._done = done
        self._jobs: deque[Job] = deque()
        self.busy_since: float | None = None
        self.outcome: Outcome | None = None
        self.name = name
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    @property
    def idle(self) -> bool:
        """No job running or waiting (call under the lock)."""
        return self.busy_since is None and not self._jobs

    def submit(self, job: Job) -> None:
        """Queue ``job`` (call under the lock); it runs after the one running, if any."""
        self._jobs.append(job)
        self._jobs_ready.notify()

    def _run(self) -> None:
        with self._lock:
            while True:
                while not self._jobs:
                    self._jobs_ready.wait()
                job = self._jobs.popleft()
                if job.stop:
                    return
                self.busy_since = time.monotonic()
                self._lock.release()
                try:
                    outcome = self._run_job(job)
                    outcome = _with_target(outcome, self.target())
                finally:
                    self._lock.acquire()
                self.busy_since = None
                self.outcome = outcome
                self._done.notify_all()

    def target(self) -> Target | None:
        """The wrapped sink's delivery target now (None: it names none)."""
        if self._target_of is None:
            return None
        try:
            target = self._target_of()
        except Exception:  # a sink's own helper: never let it stop the delivery
            logger.debug("delivery_target() of the wrapped sink raised", exc_info=True)
            return None
        return dict(target) if isinstance(target, Mapping) else None

    def _run_job(self, job: Job) -> Outcome:
        if not job.suspect:
            return self._send(list(job.entries))
        head, after = job.entries
        first = self._send([head])
        if first.error is None:
            return first
        second = self._send([after])
        if second.error is None:
            # The tracker is up. The first may only have met the end of an outage (the
            # server came back between the two calls): refused only if it fails again now.
            again = self._send([head])
            if again.error is None:
                return Outcome(done=2)
            if isinstance(again.error, StepOrderError) and self._send_late(head):
                return Outcome(done=2)  # refused for its place only: kept where it can be
            return Outcome(failed_calls=2, refused=again.error)
        return Outcome(error=first.error, call_size=1, failed_calls=2)

    def _send(self, entries: list[Entry]) -> Outcome:
        """Send ``entries`` in order: configs and closes one per call, runs of steps together."""
        done = 0
        close_error: Exception | None = None
        while done < len(entries):
            entry = entries[done]
            end = done + 1
            try:
                if entry.close is not None:
                    close_error = self._close(entry) or close_error
                elif entry.config is not None:
                    self._sink.log_config(entry.config)
                else:
                    while end < len(entries) and entries[end].logs is not None:
                        end += 1
                    timed = self._log_many_at is not None
                    if self._log_many is None and not (timed and _all_timed(entries[done:end])):
                        end = done + 1  # one per call: a failure then names its step
                    self._send_steps(entries[done:end])
            except Exception as exc:
                return Outcome(
                    done=done,
                    error=exc,
                    call_size=end - done,
                    failed_calls=1,
                    close_error=close_error,
                )
            done = end
        return Outcome(done=done, close_error=close_error)

    def _send_late(self, entry: Entry) -> bool:
        """Send a step that now comes after a higher one, where the sink keeps such steps.

        A suspect job's second entry went through while the first met the end of an
        outage: the first is no longer in order, but a tracker such as MLflow keeps it.
        """
        if entry.logs is None or entry.step is None:
            return False
        late_at = _method(self._sink, "log_late_at")
        late = _method(self._sink, "log_late")
        try:
            if late_at is not None and entry.time is not None:
                late_at([_step_logs(entry)], [entry.time])
            elif late is not None:
                late([_step_logs(entry)])
            else:
                return False
        except Exception:
            logger.debug("a late step %s was not taken", entry.step, exc_info=True)
            return False
        return True

    def _send_steps(self, run: list[Entry]) -> None:
        """Send the steps of ``run`` in one call (the first alone if the sink takes one)."""
        times = [e.time for e in run if e.time is not None]
        if self._log_many_at is not None and len(times) == len(run):
            self._log_many_at([_step_logs(e) for e in run], times)
        elif self._log_many is not None and len(run) > 1:
            self._log_many([_step_logs(e) for e in run])
        else:
            step, logs = _step_logs(run[0])
            self._sink.log(logs, step)

    def _close(self, entry: Entry) -> Exception | None:
        """Deliver a close entry; the error of a close that is done with regardless, if any.

        Raises:
            Exception: The close failed and can be tried again (by ``replay_close``).
        """
        record = entry.close or {}
        target = record.get("target")
        closed_at = entry.time if entry.time is not None else time.time()
        if self._replay_close is not None:
            # What close() does to the run, at the time of the close (a failure is tried
            # again, as any call): for a close deferred by an outage, that is long ago.
            self._replay_close(target if isinstance(target, dict) else None, closed_at)
        if record.get("owner") == self._stem and not self._closed:
            self._closed = True
            try:
                self._sink.close()
            except Exception as exc:
                return exc  # done with regardless: a sink's close() is called once
        return None
