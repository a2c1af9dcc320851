"""A small pool of long-lived worker processes, each call bounded by a wall-clock timeout.

Math-Verify bounds its sympy work with SIGALRM, which works only in the main thread of the
main interpreter: not in thread pools, async workers served by threads, or many Ray
setups. Here every call runs in a worker process instead; the caller waits on the worker's
socket for at most the timeout, and a worker that overruns is killed and replaced, so a
pathological expression costs one timeout and one process start, never a hung trainer.

A worker is a fresh interpreter running a script (``_math_worker.py``), not a fork or a
multiprocessing spawn: a fork of a process holding threads and locks can deadlock, and a
spawn re-imports the caller's ``__main__`` (re-running a training script without a
``__main__`` guard). Workers start on first use and stay up between calls; the pool is safe
to use from any number of threads at once.
"""

from __future__ import annotations

import os
import queue
import socket
import subprocess
import sys
import threading
from multiprocessing.connection import Connection
from typing import Any

from gradewire.core._errors import GradingError, InvalidInputError

__all__ = ["PoolTimeout", "WorkerCrashed", "WorkerPool"]

# How long a new worker may take to import what it runs (sympy alone takes a second or two).
_START_TIMEOUT = 120.0


class PoolTimeout(GradingError):
    """A call overran its timeout; its worker was killed and will be replaced."""


class WorkerCrashed(GradingError):
    """A worker process died during a call (out of memory, a crash in native code)."""


class _Worker:
    def __init__(self, script: str) -> None:
        ours, theirs = socket.socketpair()
        try:
            env = dict(os.environ)
            # The worker imports what this process can: the same module search path.
            env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
            self.process = subprocess.Popen(
                [sys.executable, script, str(theirs.fileno())],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                env=env,
                close_fds=True,
            )
        finally:
            theirs.close()
        self.conn = Connection(ours.detach())
        self.ready = False

    def wait_ready(self) -> None:
        """Wait until the worker has imported what it runs (not counted in any call's timeout)."""
        if not self.conn.poll(_START_TIMEOUT):
            raise WorkerCrashed(f"a math worker process did not start within {_START_TIMEOUT:g} s")
        ok, message = self.conn.recv()
        if not ok:
            raise WorkerCrashed(f"a math worker process could not start: {message}")
        self.ready = True

    def kill(self) -> None:
        self.conn.close()
        self.process.kill()
        self.process.wait(5.0)


class WorkerPool:
    """Up to ``size`` worker processes running the function ``setup()`` returns.

    Args:
        script: The worker program's path: it serves calls on the socket whose file
            descriptor it is given (see ``_math_worker.py``).
        size: The most workers alive at once, and so the most calls running at once;
            further callers wait for a free worker.
    """

    def __init__(self, script: str, size: int) -> None:
        if not isinstance(size, int) or size < 1:
            raise InvalidInputError(f"a worker pool needs size >= 1, not {size!r}")
        self.script = script
        self.size = size
        self.replaced = 0
        self._reset()

    def _reset(self) -> None:
        # One slot per worker: a caller holds a slot for its whole call, so at most
        # `size` workers exist, and a slot freed by a killed worker lets the next
        # caller start a new one.
        self._slots = threading.BoundedSemaphore(self.size)
        self._idle: queue.SimpleQueue[_Worker] = queue.SimpleQueue()
        self._pid = os.getpid()

    def call(self, args: tuple[Any, ...], timeout: float) -> Any:
        """Run the function on ``args`` in a worker; wait at most ``timeout`` seconds for it.

        The timeout counts from the moment a worker takes the call, so waiting for a free
        worker (or starting one) never counts against it.

        Raises:
            PoolTimeout: The call overran; its worker was killed (the next call starts a new one).
            WorkerCrashed: The worker died during the call.
            RuntimeError: The function raised: the message names its exception.
        """
        if os.getpid() != self._pid:
            # A forked child inherits the parent's pipes: it must start its own workers.
            self._reset()
        with self._slots:
            try:
                worker = self._idle.get_nowait()
            except queue.Empty:
                worker = _Worker(self.script)
            if not worker.ready:
                try:
                    worker.wait_ready()
                except BaseException as exc:
                    worker.kill()  # not replaced: a worker that cannot start would loop
                    if isinstance(exc, WorkerCrashed):
                        raise
                    raise WorkerCrashed(
                        f"a math worker process died as it started ({type(exc).__name__})"
                    ) from None
            try:
                worker.conn.send(args)
                # poll() returns as soon as the answer is there: the bound costs nothing
                # on calls that finish in time.
                if not worker.conn.poll(timeout):
                    self._retire(worker)
                    raise PoolTimeout(f"the call overran its {timeout:g} s timeout")
                ok, value = worker.conn.recv()
            except (EOFError, OSError) as exc:
                self._retire(worker)
                raise WorkerCrashed(
                    f"a math worker process died during the call ({type(exc).__name__}); "
                    "the next call starts a new one"
                ) from None
            except PoolTimeout:
                raise
            except BaseException:
                self._retire(worker)
                raise
            self._idle.put(worker)
        if not ok:
            name, message = value
            raise RuntimeError(f"{name}: {message}")
        return value

    def _retire(self, worker: _Worker) -> None:
        worker.kill()
        self.replaced += 1
        # Popen returns at once: the replacement imports in the background while the
        # caller handles the failure, so the next call rarely waits for it.
        self._idle.put(_Worker(self.script))

    def close(self) -> None:
        """Stop the idle workers; a later call starts new ones."""
        while True:
            try:
                worker = self._idle.get_nowait()
            except queue.Empty:
                return
            worker.kill()
