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
to use from any number of threads at once, and from event loops (`WorkerPool.acall`, which
kills the worker when the awaiting task is cancelled, so a grade's timeout holds).

A worker dies with this process, even in the middle of a call (`_worker_life`): it is
forked from one thread of the pool's own that lives as long as the process, so the
kernel's death signal (which follows the forking thread) fires when the process dies and
never when some caller's thread ends.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
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


class _Spawner:
    """The one thread that starts a pool's workers, alive as long as the process."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[
            tuple[list[str], int, concurrent.futures.Future[subprocess.Popen[bytes]]]
        ] = queue.SimpleQueue()
        threading.Thread(target=self._serve, name="gradewire-worker-spawner", daemon=True).start()

    def start(self, argv: list[str], fd: int) -> subprocess.Popen[bytes]:
        future: concurrent.futures.Future[subprocess.Popen[bytes]] = concurrent.futures.Future()
        self._jobs.put((argv, fd, future))
        return future.result()

    def _serve(self) -> None:
        while True:
            argv, fd, future = self._jobs.get()
            try:
                env = dict(os.environ)
                # The worker imports what this process can: the same module search path.
                env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
                process = subprocess.Popen(
                    argv,
                    pass_fds=(fd,),
                    stdin=subprocess.DEVNULL,
                    env=env,
                    close_fds=True,
                )
            except BaseException as exc:
                future.set_exception(exc)
            else:
                future.set_result(process)


class _Worker:
    def __init__(self, script: str, spawner: _Spawner) -> None:
        ours, theirs = socket.socketpair()
        try:
            argv = [sys.executable, script, str(theirs.fileno()), str(os.getpid())]
            self.process = spawner.start(argv, theirs.fileno())
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self.conn = Connection(ours.detach())
        self.ready = False

    def wait_ready(self) -> None:
        """Wait until the worker has imported what it runs (not counted in any call's timeout)."""
        if not self.conn.poll(_START_TIMEOUT):
            raise WorkerCrashed(f"a worker process did not start within {_START_TIMEOUT:g} s")
        self.take_ready()

    def take_ready(self) -> None:
        """Read the worker's ready message (it has arrived)."""
        ok, message = self.conn.recv()
        if not ok:
            raise WorkerCrashed(f"a worker process could not start: {message}")
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
        self._spawner = _Spawner()

    def call(self, args: tuple[Any, ...], timeout: float) -> Any:
        """Run the function on ``args`` in a worker; wait at most ``timeout`` seconds for it.

        The timeout counts from the moment a worker takes the call, so waiting for a free
        worker (or starting one) never counts against it.

        Raises:
            PoolTimeout: The call overran; its worker was killed (the next call starts a new one).
            WorkerCrashed: The worker died during the call.
            RuntimeError: The function raised: the message names its exception.
        """
        self._check_fork()
        with self._slots:
            worker = self._take()
            if not worker.ready:
                try:
                    worker.wait_ready()
                except BaseException as exc:
                    worker.kill()  # not replaced: a worker that cannot start would loop
                    if isinstance(exc, WorkerCrashed):
                        raise
                    raise WorkerCrashed(
                        f"a worker process died as it started ({type(exc).__name__})"
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
                    f"a worker process died during the call ({type(exc).__name__}); "
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

    async def acall(self, args: tuple[Any, ...], timeout: float | None = None) -> Any:
        """`call`, awaited on the running event loop, which it never blocks for long.

        Cancelling the awaiting task (a grade's timeout, Ctrl-C) kills the worker at once,
        so the work stops with the grade; a new worker replaces it. ``timeout`` (None: no
        bound of its own) counts from the moment a worker takes the call, as in `call`.

        Raises:
            PoolTimeout, WorkerCrashed, RuntimeError: As `call`.
        """
        self._check_fork()
        await self._acquire_slot()
        try:
            worker = self._take()
            if not worker.ready:
                try:
                    if not await _readable(worker.conn, _START_TIMEOUT):
                        raise WorkerCrashed(
                            f"a worker process did not start within {_START_TIMEOUT:g} s"
                        )
                    worker.take_ready()
                except BaseException as exc:
                    worker.kill()  # not replaced: a worker that cannot start would loop
                    if isinstance(exc, (WorkerCrashed, asyncio.CancelledError)):
                        raise
                    raise WorkerCrashed(
                        f"a worker process died as it started ({type(exc).__name__})"
                    ) from None
            try:
                worker.conn.send(args)
                if not await _readable(worker.conn, timeout):
                    self._retire(worker)
                    raise PoolTimeout(f"the call overran its {timeout:g} s timeout")
                ok, value = worker.conn.recv()
            except (EOFError, OSError) as exc:
                self._retire(worker)
                raise WorkerCrashed(
                    f"a worker process died during the call ({type(exc).__name__}); "
                    "the next call starts a new one"
                ) from None
            except PoolTimeout:
                raise
            except BaseException:  # cancelled: the work stops now, not when it is done
                self._retire(worker)
                raise
            self._idle.put(worker)
        finally:
            self._slots.release()
        if not ok:
            name, message = value
            raise RuntimeError(f"{name}: {message}")
        return value

    async def _acquire_slot(self) -> None:
        # The slots are shared with threads that call `call`: polled, never waited on
        # in a way that would block the event loop.
        pause = 0.001
        while not self._slots.acquire(blocking=False):
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.05)

    def _check_fork(self) -> None:
        if os.getpid() != self._pid:
            # A forked child inherits the parent's pipes: it must start its own workers.
            self._reset()

    def _take(self) -> _Worker:
        """An idle worker that is still alive, or a new one."""
        while True:
            try:
                worker = self._idle.get_nowait()
            except queue.Empty:
                return _Worker(self.script, self._spawner)
            if worker.process.poll() is None:
                return worker
            worker.conn.close()  # killed from outside while idle

    def _retire(self, worker: _Worker) -> None:
        worker.kill()
        self.replaced += 1
        # Popen returns at once: the replacement imports in the background while the
        # caller handles the failure, so the next call rarely waits for it.
        self._idle.put(_Worker(self.script, self._spawner))

    def close(self) -> None:
        """Stop the idle workers; a later call starts new ones."""
        while True:
            try:
                worker = self._idle.get_nowait()
            except queue.Empty:
                return
            worker.kill()


async def _readable(conn: Connection, timeout: float | None) -> bool:
    """Wait, on the event loop, until ``conn`` has data (or end of file); False on timeout."""
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[None] = loop.create_future()
    descriptor = conn.fileno()

    def wake() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_reader(descriptor, wake)
    try:
        await asyncio.wait_for(ready, timeout)
    except asyncio.TimeoutError:
        return False
    finally:
        loop.remove_reader(descriptor)
    return True
