"""Caller: the one thread that calls the wrapped sink, one job at a time.

Keeping the calls on a thread of their own leaves the worker free while a call hangs (a
tracker that retries for minutes inside its own client, a server that accepts connections
and never answers): the worker keeps moving entries to disk meanwhile.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from gradewire.sinks._sink import Sink, StepLogs
from gradewire.sinks.background._spill_format import Entry

__all__ = ["Caller", "Job", "Outcome"]


@dataclass(frozen=True)
class Job:
    """Entries to send in order; ``suspect``: send the first alone, and if it fails the second.

    A suspect job tells a refused entry from an outage: the first entry has failed many
    times, so if it fails again, the entry after it goes through, and the first still
    fails once more after that, it is refused.
    ``close`` calls the wrapped sink's ``close()`` instead (and ends the thread).
    """

    entries: tuple[Entry, ...] = ()
    suspect: bool = False
    close: bool = False


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
    """

    done: int = 0
    error: Exception | None = None
    call_size: int = 0
    failed_calls: int = 0
    refused: Exception | None = None


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

    def __init__(self, sink: Sink, lock: threading.Lock, done: threading.Condition, name: str):
        self._sink = sink
        log_many = getattr(sink, "log_many", None)
        self._log_many: Callable[[Sequence[StepLogs]], Any] | None = (
            log_many if callable(log_many) else None
        )
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
                self.busy_since = time.monotonic()
                self._lock.release()
                try:
                    outcome = self._close() if job.close else self._run_job(job)
                finally:
                    self._lock.acquire()
                self.busy_since = None
                self.outcome = outcome
                self._done.notify_all()
                if job.close:
                    return

    def _close(self) -> Outcome:
        try:
            self._sink.close()
        except Exception as exc:
            return Outcome(error=exc, failed_calls=1)
        return Outcome()

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
            return Outcome(failed_calls=2, refused=again.error)
        return Outcome(error=first.error, call_size=1, failed_calls=2)

    def _send(self, entries: list[Entry]) -> Outcome:
        """Send ``entries`` in order, configs one per call, runs of steps by ``log_many``."""
        done = 0
        while done < len(entries):
            entry = entries[done]
            end = done + 1
            try:
                if entry.config is not None:
                    self._sink.log_config(entry.config)
                else:
                    while end < len(entries) and entries[end].config is None:
                        end += 1
                    if self._log_many is not None and end - done > 1:
                        self._log_many([_step_logs(e) for e in entries[done:end]])
                    else:
                        end = done + 1
                        step, logs = _step_logs(entry)
                        self._sink.log(logs, step)
            except Exception as exc:
                return Outcome(done=done, error=exc, call_size=end - done, failed_calls=1)
            done = end
        return Outcome(done=done)
