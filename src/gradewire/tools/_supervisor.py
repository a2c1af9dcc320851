"""The grading side of the supervisor (`gradewire.tools._reaper`): one per process, shared.

The first supervised command of a process starts the supervisor; every later command,
from any event loop or thread of the process, reuses it and its idle workers, so a grade
costs a message and a report rather than an interpreter's start. A thread of this process
starts the supervisor and then reads the reports of all its workers, handing each to the
event loop of the grade it belongs to: the supervisor's death signal
(``PR_SET_PDEATHSIG``) follows the thread that started it, and this thread lives as long
as the supervisor.

If the supervisor dies, the grades in flight fail with `GradingError` once their workers
have ended their commands, and the next command starts a new supervisor. When this
process exits, the supervisor sees end of file, ends every command, and exits too.
Commands inherit this process's umask and resource limits as they were when the
supervisor started; their environment, directory and descriptors are the grade's own. The
supervisor itself starts with no secret of this process's environment (only what Python
needs to run) and, with its workers, is not dumpable (`_reaper`).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import errno
import itertools
import marshal
import os
import select
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gradewire.core._errors import GradingError

__all__ = ["Command", "Report", "start_command", "supervised"]

_REAPER = Path(__file__).with_name("_reaper.py")
# The supervisor's own environment: enough to run Python. Never this process's API keys
# and tokens: /proc shows a process's starting environment to its user's other processes,
# and the commands it runs get theirs with each command.
_SUPERVISOR_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "LD_LIBRARY_PATH")
_HEADER = struct.Struct("!I")
# Idle workers kept for later commands; more than this many are closed once idle.
_IDLE_MAX = 64
# How long sending a command to a worker may block (it reads at once unless it is stuck).
_SEND_S = 30.0
# How long this process waits at exit for the supervisor to end what still runs.
_EXIT_WAIT_S = 10.0


def supervised() -> bool:
    """Whether commands run under the subreaper supervisor on this system."""
    return sys.platform.startswith("linux") and bool(sys.executable) and _REAPER.is_file()


@dataclass(frozen=True)
class Report:
    """How a command ended, once nothing it started runs."""

    exit_code: int
    """Negative when a signal ended it (Python's convention)."""
    leftovers: bool
    """Processes it started ran on after it exited, and were ended."""
    duration: float | None
    """Seconds from its start to its exit, as the worker saw them (None if it did not)."""
    contained: bool
    """Its worker was a child subreaper: processes that left its group were ended too."""


class _Worker:
    """The grading side of one worker process."""

    def __init__(self, wid: int, sock: socket.socket) -> None:
        self.wid = wid
        self.socket = sock
        self.pid: int | None = None
        self.contained = False
        self.ready = False
        self.waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self.command: Command | None = None
        self.doomed = False
        """The supervisor was told to kill it: it never takes another command."""

    def send(self, message: tuple[Any, ...], fds: Sequence[int] = ()) -> None:
        _send(self.socket, message, fds)


class Command:
    """A command a worker runs; ``done`` gets its `Report`.

    ``done`` fails with the `OSError` of a command that could not start, and with
    `GradingError` when the supervisor went away while the command ran.
    """

    def __init__(
        self,
        supervisor: _Supervisor,
        worker: _Worker,
        ident: int,
        loop: asyncio.AbstractEventLoop,
        argv: Sequence[str],
        cwd: str,
    ) -> None:
        self._supervisor = supervisor
        self._worker = worker
        self._ident = ident
        self._loop = loop
        self._argv = argv
        self._cwd = cwd
        self.done: asyncio.Future[Report] = loop.create_future()

    async def started(self, limit: float) -> None:
        """Wait (at most ``limit`` seconds) until a worker that was just forked is ready."""
        future = self._supervisor.when_ready(self._worker, self._loop)
        if future is not None:
            waits: set[asyncio.Future[Any]] = {future, self.done}
            await asyncio.wait(waits, timeout=limit, return_when=asyncio.FIRST_COMPLETED)

    def terminate(self) -> None:
        """SIGTERM to everything the command started, SIGKILL after the grace."""
        self._tell("term")

    def hurry(self) -> None:
        """SIGKILL to everything the command started, now."""
        self._tell("hurry")

    def kill(self) -> None:
        """Have the supervisor kill the worker (it does not answer) and all below it."""
        self._supervisor.kill(self._worker)

    def _tell(self, kind: str) -> None:
        if not self.done.done():
            with contextlib.suppress(OSError):  # the worker is gone: its loss is reported
                self._worker.send((kind, self._ident))

    def _settle(self, line: Mapping[str, str], contained: bool) -> None:
        """Resolve ``done`` from a report line (called on the event loop's thread)."""
        if self.done.done():
            return
        if "spawn_error" in line:
            number = int(line["spawn_error"])
            where = self._cwd if line.get("where") == "cwd" else self._argv[0]
            self.done.set_exception(OSError(number, os.strerror(number), where))
        elif line.get("shutdown") == "1" or "lost" in line:
            why = line.get("lost", "it was killed, or this process is exiting")
            self.done.set_exception(
                GradingError(
                    f"the supervisor process that runs grader commands is gone ({why}); "
                    "this command's processes were ended, and the next grade starts a new "
                    "supervisor"
                )
            )
        elif "exit" in line:
            duration = float(line["duration"]) if "duration" in line else None
            self.done.set_result(
                Report(int(line["exit"]), line.get("leftovers") == "1", duration, contained)
            )
        else:
            number = int(line.get("fork_error", errno.EAGAIN))
            self.done.set_exception(
                GradingError(
                    f"could not start a process to run the command: {os.strerror(number)}; "
                    "the machine may be out of memory or processes"
                )
            )


class _Supervisor:
    """One supervisor process, its workers, and the thread that reads their reports."""

    def __init__(self) -> None:
        self.owner = os.getpid()
        self.alive = True
        self.pid: int | None = None
        self._lock = threading.Lock()
        self._control_lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._workers: dict[int, _Worker] = {}
        self._wids = itertools.count(1)
        self._idents = itertools.count(1)
        self._control, theirs = socket.socketpair()
        self._control.settimeout(_SEND_S)
        self._report_r, report_w = os.pipe()
        self._thread = threading.Thread(
            target=self._serve,
            args=(theirs, report_w),
            name="gradewire-command-supervisor",
            daemon=True,
        )
        self._thread.start()

    # Called from the grading side (any thread).

    def run(
        self,
        loop: asyncio.AbstractEventLoop,
        argv: Sequence[str],
        *,
        cwd: str,
        env: Mapping[bytes, bytes],
        grace: float,
        fds: Sequence[int],
        stdin: bool,
    ) -> Command:
        """Send the command to an idle worker (a new one if none is idle)."""
        worker = self._acquire()
        command = Command(self, worker, next(self._idents), loop, argv, cwd)
        worker.command = command
        message = ("run", command._ident, list(argv), dict(env), cwd, grace, stdin)
        try:
            worker.send(message, fds)
        except OSError as exc:
            # The worker died before it could take the command (its loss is reported
            # with no command attached), or it is stuck: the supervisor kills it.
            with self._lock:
                worker.command = None
            self.kill(worker)
            raise _Unusable(str(exc)) from exc
        return command

    def when_ready(
        self, worker: _Worker, loop: asyncio.AbstractEventLoop
    ) -> asyncio.Future[None] | None:
        """A future done once ``worker`` is ready; None if it is ready already."""
        with self._lock:
            if worker.ready or not self.alive:
                return None
            future = loop.create_future()
            worker.waiters.append((loop, future))
            return future

    def kill(self, worker: _Worker) -> None:
        with self._lock:
            worker.doomed = True  # a report that crosses the kill must not make it idle
        with contextlib.suppress(OSError):
            self._send_control(("kill", worker.wid))

    def stop(self, wait: float) -> None:
        """End the supervisor (it ends every command) and wait for it."""
        with contextlib.suppress(OSError):
            self._control.shutdown(socket.SHUT_RDWR)
        self._thread.join(wait)

    def forget(self) -> None:
        """In a forked child: let go of the parent's supervisor without touching it."""
        self.alive = False
        self._control.close()
        for worker in self._workers.values():
            worker.socket.close()
        with contextlib.suppress(OSError):
            os.close(self._report_r)

    def _acquire(self) -> _Worker:
        with self._lock:
            if not self.alive:
                raise _Unusable("the supervisor has stopped")
            if self._idle:
                return self._idle.pop()
            mine, theirs = socket.socketpair()
            mine.settimeout(_SEND_S)
            worker = _Worker(next(self._wids), mine)
            self._workers[worker.wid] = worker
        try:
            self._send_control(("worker", worker.wid), [theirs.fileno()])
        except OSError as exc:
            with self._lock:
                self._workers.pop(worker.wid, None)
            mine.close()
            raise _Unusable(str(exc)) from exc
        finally:
            theirs.close()
        return worker

    def _send_control(self, message: tuple[Any, ...], fds: Sequence[int] = ()) -> None:
        with self._control_lock:
            _send(self._control, message, fds)

    # The reading thread.

    def _serve(self, theirs: socket.socket, report_w: int) -> None:
        arguments = (os.getpid(), theirs.fileno(), report_w)
        try:
            process = subprocess.Popen(
                [sys.executable, "-I", "-S", str(_REAPER), *(str(n) for n in arguments)],
                pass_fds=(theirs.fileno(), report_w),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                env={name: os.environ[name] for name in _SUPERVISOR_ENV if name in os.environ},
                start_new_session=True,  # out of reach of the terminal's Ctrl-C
                cwd="/",  # keeps no directory busy; each command says where it runs
            )
        except OSError as exc:
            self._finish(f"it could not be started with {sys.executable}: {exc}")
            return
        finally:
            theirs.close()
            os.close(report_w)
        self.pid = process.pid
        try:
            self._read_reports()
        finally:
            # Normally every writer has closed the report pipe by now; after an error in
            # this thread, end of file on its control socket ends the supervisor.
            with contextlib.suppress(OSError):
                self._control.shutdown(socket.SHUT_RDWR)
            process.wait()
            self._finish(f"it exited with {process.returncode}")

    def _read_reports(self) -> None:
        """Dispatch report lines until every writer (supervisor and workers) is gone."""
        poller = select.poll()
        poller.register(self._report_r, select.POLLIN)
        poller.register(self._control, select.POLLIN)
        pending = b""
        while True:
            events = poller.poll()
            descriptors = {descriptor for descriptor, _ in events}
            if self._report_r in descriptors:
                chunk = os.read(self._report_r, 65536)
                if not chunk:
                    return
                lines = (pending + chunk).split(b"\n")
                pending = lines.pop()
                for line in lines:
                    with contextlib.suppress(ValueError, IndexError):  # not a report line
                        self._dispatch(line.decode("ascii", "replace").split())
            if self._control.fileno() in descriptors:
                # The supervisor closed its end (it died) or this process shut it down:
                # new commands go to a new supervisor, while the workers still running
                # end their commands and report.
                poller.unregister(self._control)
                self._retire_idle()

    def _retire_idle(self) -> None:
        with self._lock:
            self.alive = False
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.socket.close()

    def _dispatch(self, words: list[str]) -> None:
        if len(words) < 3:
            return
        kind, wid = words[0], int(words[1])
        with self._lock:
            worker = self._workers.get(wid)
        if worker is None:
            return
        if kind == "R":
            self._on_ready(worker, words)
        elif kind == "D":
            fields = dict(word.partition("=")[::2] for word in words[3:])
            self._on_done(worker, int(words[2]), fields)
        elif kind == "L":
            self._on_lost(worker, {"exit": str(os.waitstatus_to_exitcode(int(words[2])))})
        elif kind == "F":
            self._on_lost(worker, {"fork_error": words[2]})

    def _on_ready(self, worker: _Worker, words: list[str]) -> None:
        with self._lock:
            worker.pid, worker.contained, worker.ready = int(words[2]), words[3] == "1", True
            waiters, worker.waiters = worker.waiters, []
        for loop, future in waiters:
            _call(loop, _resolve, future)

    def _on_done(self, worker: _Worker, ident: int, fields: dict[str, str]) -> None:
        with self._lock:
            command = worker.command
            if command is None or command._ident != ident:
                return
            worker.command = None
            retire = not self.alive or worker.doomed or len(self._idle) >= _IDLE_MAX
            if retire:
                self._workers.pop(worker.wid, None)
            else:
                self._idle.append(worker)  # before the grade hears: its next command may use it
        if retire:
            worker.socket.close()
        _call(command._loop, command._settle, fields, worker.contained)

    def _on_lost(self, worker: _Worker, fields: dict[str, str]) -> None:
        """The worker died (its command killed it?) or never started; it is dropped."""
        with self._lock:
            self._workers.pop(worker.wid, None)
            if worker in self._idle:
                self._idle.remove(worker)
            command, worker.command = worker.command, None
            waiters, worker.waiters = worker.waiters, []
        worker.socket.close()
        for loop, future in waiters:
            _call(loop, _resolve, future)
        if command is not None:
            _call(command._loop, command._settle, fields, worker.contained)

    def _finish(self, why: str) -> None:
        """Fail what is still waiting: no report can come any more."""
        with self._lock:
            self.alive = False
            workers, self._workers, self._idle = list(self._workers.values()), {}, []
        for worker in workers:
            self._on_lost(worker, {"lost": why})
        self._control.close()
        with contextlib.suppress(OSError):
            os.close(self._report_r)


class _Unusable(Exception):
    """The supervisor (or the worker picked) cannot take a command; try a new one."""


def _send(sock: socket.socket, message: tuple[Any, ...], fds: Sequence[int]) -> None:
    body = marshal.dumps(message)
    data = memoryview(_HEADER.pack(len(body)) + body)
    ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack(f"{len(fds)}i", *fds))]
    sent = sock.sendmsg([data], ancillary if fds else [])
    if sent < len(data):
        sock.sendall(data[sent:])


def _call(loop: asyncio.AbstractEventLoop, function: Any, *args: Any) -> None:
    with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
        loop.call_soon_threadsafe(function, *args)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


_current: _Supervisor | None = None
_current_lock = threading.Lock()
_hooks_installed = False


def start_command(
    loop: asyncio.AbstractEventLoop,
    argv: Sequence[str],
    *,
    cwd: str,
    env: Mapping[bytes, bytes],
    grace: float,
    fds: Sequence[int],
    stdin: bool,
) -> Command:
    """Run ``argv`` under this process's supervisor (started on first use).

    ``fds`` are the command's stdout, stderr and (with ``stdin``) stdin; the caller keeps
    its own copies. Raises `GradingError` if no supervisor can take the command.
    """
    problem = ""
    for _ in range(2):  # a supervisor or worker that died between grades: a new one
        supervisor = _shared()
        try:
            return supervisor.run(loop, argv, cwd=cwd, env=env, grace=grace, fds=fds, stdin=stdin)
        except _Unusable as exc:
            problem = str(exc)
    raise GradingError(
        f"the supervisor process that runs grader commands cannot take commands "
        f"({problem}); the machine may be out of memory or processes"
    )


def _shared() -> _Supervisor:
    global _current, _hooks_installed
    with _current_lock:
        if not _hooks_installed:
            _hooks_installed = True
            atexit.register(_stop_at_exit)
            os.register_at_fork(after_in_child=_forget_in_child)
        if _current is None or not _current.alive or _current.owner != os.getpid():
            _current = _Supervisor()
        return _current


def _stop_at_exit() -> None:
    supervisor = _current
    if supervisor is not None and supervisor.owner == os.getpid():
        supervisor.stop(_EXIT_WAIT_S)


def _forget_in_child() -> None:
    # The child of a fork holds copies of the parent's sockets: closing them lets the
    # parent's workers see end of file when the parent closes them. The lock may have
    # been held by another thread of the parent at the fork.
    global _current, _current_lock
    _current_lock = threading.Lock()
    supervisor, _current = _current, None
    if supervisor is not None:
        supervisor.forget()
