"""The supervisor of grader commands: nothing a command starts outlives it (Linux).

One supervisor serves a whole grading process. `gradewire.tools._supervisor` starts it on
first use as a script, ``python -I -S _reaper.py PARENT CONTROL_FD REPORT_FD`` (the
standard library only: it runs without site-packages), so the interpreter's start and
imports are paid once, not once a grade.

Two roles, one file. The *supervisor* forks *workers* when the grading process asks for
one (a ``worker`` message on CONTROL_FD carrying the worker's socket) and kills a worker
on request (``kill``). Each worker runs one command at a time, received on its own socket
(``run``, then maybe ``term`` or ``hurry`` for that command), and writes one report line
per command to REPORT_FD. Both are child subreapers (``PR_SET_CHILD_SUBREAPER``):

- a process that leaves the command's process group or session (``setsid``, ``set -m``
  jobs, ``setpgid``) and loses its parent is handed to the nearest living subreaper above
  it, its worker, instead of to init. A worker runs one command at a time and takes the
  next only once it has no child left, so everything below a worker belongs to the
  command it runs: no per-command bookkeeping of pids, and nothing to attribute.
- when a worker dies (the command killed it), what was below it is handed to the
  supervisor, whose only other children are workers: whatever else it finds below itself
  is killed at once, before the worker's loss is reported.

Once a command has exited (or on ``term``), what is left below its worker gets SIGTERM,
then SIGKILL after the command's grace (at once on ``hurry``); the worker reports only
when nothing is left. The supervisor gets SIGTERM when the grading process dies
(``PR_SET_PDEATHSIG``) and sees end of file on CONTROL_FD when it exits; either way it
tells every worker to end its command and exits when they have. A worker gets SIGTERM
when the supervisor dies and ends its command the same way.

Messages on the sockets are a 4-byte big-endian length and a `marshal` payload; file
descriptors travel with the length (``SCM_RIGHTS``). Report lines are shorter than
``PIPE_BUF``, so the writes of many workers never interleave:

- ``R WID PID CONTAINED``: worker WID (process PID) is ready; CONTAINED is 1 when it is a
  subreaper.
- ``D WID ID exit=CODE leftovers=0|1 duration=S shutdown=0|1``: command ID is over and
  nothing it started runs; ``shutdown=1`` when it was ended because the supervisor or
  the grading process went away rather than at the grading side's request.
- ``D WID ID spawn_error=ERRNO where=cwd|program``: command ID could not start.
- ``L WID STATUS``: worker WID died with wait status STATUS; what it left was killed.
- ``F WID ERRNO``: worker WID could not be forked.

Signals are handled in the event loop of each process (a wakeup fd in its ``poll``), never
in between two steps: the handlers themselves do nothing.
"""

from __future__ import annotations

import contextlib
import ctypes
import marshal
import os
import select
import signal
import socket
import struct
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_PR_SET_CHILD_SUBREAPER = 36
_STOP = frozenset({signal.SIGTERM, signal.SIGINT, signal.SIGHUP})
_HURRY = signal.SIGUSR1
_HANDLED = frozenset({signal.SIGCHLD, _HURRY, *_STOP})
# Reset to their defaults in the command: Python itself ignores these two.
_DEFAULTED = tuple({signal.SIGPIPE, signal.SIGXFSZ, *_HANDLED})
_KILL_PAUSE_S = 0.005
# How long the supervisor keeps killing what a dead worker left (processes it may not
# signal, such as setuid programs, would otherwise hold it forever).
_ORPHANS_S = 10.0
# How long the supervisor waits for its workers at shutdown before killing them.
_SHUTDOWN_S = 60.0
_HEADER = struct.Struct("!I")
_MAX_FDS = 3

Prctl = Callable[[int, int, int, int, int], int]


def _load_prctl() -> Prctl | None:
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.restype = ctypes.c_int
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    return prctl


def _adopt_orphans(prctl: Prctl | None, parent: int) -> bool | None:
    """Become a subreaper that gets SIGTERM when ``parent`` dies.

    Returns whether this process is a subreaper, or None when ``parent`` is already gone
    (it died before the death signal was armed: run nothing).
    """
    if prctl is not None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:
        return None
    return prctl is not None and prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def _wakeup_pipe() -> tuple[int, int]:
    """Route the handled signals to a pipe that ``poll`` watches (its read end first)."""
    read, write = os.pipe()
    os.set_blocking(read, False)
    os.set_blocking(write, False)
    signal.set_wakeup_fd(write, warn_on_full_buffer=False)
    for number in _HANDLED:
        signal.signal(number, _ignore)
    return read, write


def _ignore(number: int, frame: object) -> None:
    """The handlers do nothing: the wakeup pipe tells the loop which signal came."""


def _signals(wakeup: int) -> set[int]:
    seen: set[int] = set()
    while True:
        try:
            data = os.read(wakeup, 512)
        except BlockingIOError:
            return seen
        if not data:
            return seen
        seen.update(data)


def _descendants(root: int, skip: Iterable[int] = ()) -> list[int]:
    """Every process below ``root`` except the subtrees of ``skip``, from one /proc scan."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            descriptor = os.open(f"/proc/{name}/stat", os.O_RDONLY)
        except OSError:
            continue  # it ended since the listing
        try:
            stat = os.read(descriptor, 4096)
        except OSError:
            continue
        finally:
            os.close(descriptor)
        # "pid (comm) state ppid ..."; comm may hold spaces and parentheses.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(name))
    skipped = set(skip)
    found: list[int] = []
    todo = [pid for pid in children.get(root, ()) if pid not in skipped]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, ()))
    return found


def _signal_all(pids: Iterable[int], number: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, number)
            if number == signal.SIGTERM:
                os.kill(pid, signal.SIGCONT)  # a stopped process acts on SIGTERM once woken
        except (ProcessLookupError, PermissionError):
            pass


def _report(descriptor: int, line: str) -> None:
    with contextlib.suppress(BrokenPipeError):  # the grading process is gone: nobody reads
        os.write(descriptor, line.encode())


class _Channel:
    """Messages from the grading process on a blocking socket."""

    def __init__(self, descriptor: int) -> None:
        self.socket = socket.socket(fileno=descriptor)

    def receive(self) -> tuple[Any, list[int]] | None:
        """The next message and the descriptors it carries; None at end of file."""
        data, ancillary, _, _ = self.socket.recvmsg(
            _HEADER.size, socket.CMSG_SPACE(_MAX_FDS * 4), socket.MSG_CMSG_CLOEXEC
        )
        fds: list[int] = []
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                usable = len(payload) - len(payload) % 4
                fds.extend(struct.unpack(f"{usable // 4}i", payload[:usable]))
        header = self._exactly(_HEADER.size, data)
        body = None if header is None else self._exactly(_HEADER.unpack(header)[0])
        if body is None:
            for descriptor in fds:
                os.close(descriptor)
            return None
        return marshal.loads(body), fds

    def _exactly(self, size: int, data: bytes = b"") -> bytes | None:
        if size and not data:
            data = self.socket.recv(size)
            if not data:
                return None
        buffer = bytearray(data)
        while len(buffer) < size:
            chunk = self.socket.recv(size - len(buffer))
            if not chunk:
                return None
            buffer += chunk
        return bytes(buffer)


class _Command:
    """The command a worker runs: its wait status and how its ending goes."""

    def __init__(self, ident: int, pid: int, grace: float) -> None:
        self.ident = ident
        self.pid = pid
        self.grace = grace
        self.start = time.monotonic()
        self.status: int | None = None
        self.ended_at = 0.0
        self.deadline: float | None = None  # set once everything below is being ended
        self.hurry = False
        self.leftovers = False
        self.shutdown = False


class _Worker:
    """Runs one command at a time; reports once nothing the command started runs."""

    def __init__(self, wid: int, channel: _Channel, report_fd: int) -> None:
        self.wid = wid
        self.channel = channel
        self.report_fd = report_fd
        self.wakeup = -1
        self.poller = select.poll()
        self.command: _Command | None = None
        self.closing = False

    def serve(self, prctl: Prctl | None, parent: int) -> None:
        self.wakeup, _ = _wakeup_pipe()
        contained = _adopt_orphans(prctl, parent)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _HANDLED)  # blocked by the fork
        if contained is None:
            return
        _report(self.report_fd, f"R {self.wid} {os.getpid()} {int(contained)}\n")
        self.poller.register(self.wakeup, select.POLLIN)
        self.poller.register(self.channel.socket.fileno(), select.POLLIN)
        while not (self.closing and self.command is None):
            command = self.command
            timeout = None
            if command is not None and command.deadline is not None:
                timeout = max(command.deadline - time.monotonic(), 0.0) * 1000
            for descriptor, _ in self.poller.poll(timeout):
                if descriptor == self.wakeup:
                    self._on_signals(_signals(self.wakeup))
                elif not self.closing:
                    message = self.channel.receive()
                    if message is None:  # the grading process closed this worker
                        self._close()
                    else:
                        self._on_message(*message)
            self._step()

    def _on_signals(self, numbers: set[int]) -> None:
        if numbers & _STOP:
            self._close()
        if _HURRY in numbers and self.command is not None:
            self._hurry(self.command)

    def _close(self) -> None:
        """Take no more commands; end the running one (a second time: at once)."""
        command = self.command
        if command is not None:
            if self.closing:
                self._hurry(command)
            elif command.deadline is None:
                command.shutdown = command.status is None
                self._terminate(command)
        if not self.closing:
            self.closing = True
            self.poller.unregister(self.channel.socket.fileno())

    def _on_message(self, message: Any, fds: list[int]) -> None:
        kind, ident = message[0], message[1]
        command = self.command
        if kind == "run" and command is None:
            self._run(fds, ident, *message[2:])
            return
        if kind == "run":  # one command at a time: the grading side never sends two
            _report(self.report_fd, f"D {self.wid} {ident} spawn_error=16 where=program\n")
        for descriptor in fds:
            os.close(descriptor)
        if command is None or command.ident != ident:
            return  # about a command that is over: it came after the report
        if kind == "term" and command.deadline is None:
            self._terminate(command)
        elif kind == "hurry":
            self._hurry(command)

    def _run(
        self,
        fds: list[int],
        ident: int,
        argv: list[str],
        env: dict[bytes, bytes],
        cwd: str,
        grace: float,
        stdin: bool,
    ) -> None:
        actions: list[tuple[Any, ...]] = [
            (os.POSIX_SPAWN_DUP2, fds[0], 1),
            (os.POSIX_SPAWN_DUP2, fds[1], 2),
        ]
        if stdin:
            actions.append((os.POSIX_SPAWN_DUP2, fds[2], 0))
        else:
            actions.append((os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0))
        where = "cwd"
        try:
            os.chdir(cwd)
            where = "program"
            pid = _spawn(argv, env, actions)
        except OSError as exc:
            _report(self.report_fd, f"D {self.wid} {ident} spawn_error={exc.errno} where={where}\n")
            return
        finally:
            for descriptor in fds:
                os.close(descriptor)  # the command has its copies
            # An idle worker must not keep the command's directory busy (an unmount).
            os.chdir("/")
        self.command = _Command(ident, pid, grace)

    def _terminate(self, command: _Command) -> None:
        command.deadline = time.monotonic() + command.grace
        _signal_all(_descendants(os.getpid()), signal.SIGTERM)

    def _hurry(self, command: _Command) -> None:
        command.hurry = True
        if command.deadline is None:
            command.deadline = time.monotonic()

    def _reap(self, command: _Command) -> bool:
        """Collect exited children; whether any child (adopted ones too) is left."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return False
            if pid == 0:
                return True
            if pid == command.pid:
                command.status = status
                command.ended_at = time.monotonic()

    def _step(self) -> None:
        command = self.command
        if command is None:
            return
        left = self._reap(command)
        if left and command.status is not None and command.deadline is None:
            # The command is done and something it started still runs.
            command.leftovers = True
            self._terminate(command)
        if left and command.deadline is not None:
            if not (command.hurry or time.monotonic() >= command.deadline):
                return
            while left:
                _signal_all(_descendants(os.getpid()), signal.SIGKILL)
                time.sleep(_KILL_PAUSE_S)
                left = self._reap(command)
        if left:
            return
        self.command = None
        status = command.status
        assert status is not None  # the command is a child until it is reaped
        code = os.waitstatus_to_exitcode(status)
        duration = command.ended_at - command.start
        _report(
            self.report_fd,
            f"D {self.wid} {command.ident} exit={code} leftovers={int(command.leftovers)} "
            f"duration={duration:.6f} shutdown={int(command.shutdown)}\n",
        )


def _spawn(argv: list[str], env: dict[bytes, bytes], actions: list[tuple[Any, ...]]) -> int:
    """Start ``argv`` in a session of its own, searching the command's PATH as exec does."""
    program = argv[0]
    if "/" in program:
        paths = [program]
    else:
        paths = [os.path.join(folder, program) for folder in os.get_exec_path(env)]  # type: ignore[arg-type]
    denied: OSError | None = None
    missing: OSError | None = None
    for path in paths:
        try:
            return os.posix_spawn(
                path,
                argv,
                env,
                file_actions=actions,
                setsid=True,
                setsigmask=(),
                setsigdef=_DEFAULTED,
            )
        except PermissionError as exc:
            denied = exc
        except (FileNotFoundError, NotADirectoryError) as exc:
            missing = exc
    error = denied or missing
    raise error if error is not None else FileNotFoundError(2, os.strerror(2), program)


class _Supervisor:
    """Forks workers, kills them on request, and kills whatever a dead worker left."""

    def __init__(self, control: _Channel, report_fd: int, prctl: Prctl | None) -> None:
        self.control = control
        self.report_fd = report_fd
        self.prctl = prctl
        self.wakeup = (-1, -1)
        self.poller = select.poll()
        self.workers: dict[int, int] = {}  # pid -> wid, until reaped
        self.closing_since: float | None = None

    def serve(self) -> None:
        self.wakeup = _wakeup_pipe()
        self.poller.register(self.wakeup[0], select.POLLIN)
        self.poller.register(self.control.socket.fileno(), select.POLLIN)
        while True:
            timeout = None if self.closing_since is None else 100
            for descriptor, _ in self.poller.poll(timeout):
                if descriptor == self.wakeup[0]:
                    if _signals(descriptor) & _STOP:
                        self._close()
                elif self.closing_since is None:
                    message = self.control.receive()
                    if message is None:  # the grading process has exited
                        self._close()
                    else:
                        self._on_message(*message)
            self._reap()
            if self.closing_since is not None:
                if not self.workers:
                    return
                if time.monotonic() - self.closing_since > _SHUTDOWN_S:
                    _signal_all(self.workers, signal.SIGKILL)

    def _close(self) -> None:
        if self.closing_since is None:
            self.closing_since = time.monotonic()
            self.poller.unregister(self.control.socket.fileno())
            _signal_all(self.workers, signal.SIGTERM)
        else:
            _signal_all(self.workers, _HURRY)  # told twice: no more grace

    def _on_message(self, message: Any, fds: list[int]) -> None:
        kind, wid = message
        if kind == "worker" and len(fds) == 1:
            self._fork(wid, fds[0])
            return
        for descriptor in fds:
            os.close(descriptor)
        if kind == "kill":
            doomed = [pid for pid, known in self.workers.items() if known == wid]
            _signal_all(doomed, signal.SIGKILL)

    def _fork(self, wid: int, descriptor: int) -> None:
        # Blocked across the fork, so no signal meant for the worker reaches this process's
        # handlers (and wakeup pipe) before the worker has its own.
        signal.pthread_sigmask(signal.SIG_BLOCK, _HANDLED)
        me = os.getpid()
        try:
            pid = os.fork()
        except OSError as exc:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _HANDLED)
            os.close(descriptor)
            _report(self.report_fd, f"F {wid} {exc.errno}\n")
            return
        if pid == 0:
            code = 0
            try:
                for inherited in self.wakeup:
                    os.close(inherited)
                self.control.socket.close()
                _Worker(wid, _Channel(descriptor), self.report_fd).serve(self.prctl, me)
            except BaseException:  # a worker never returns into this loop
                code = 70
                sys.excepthook(*sys.exc_info())
            finally:
                os._exit(code)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _HANDLED)
        os.close(descriptor)
        self.workers[pid] = wid

    def _reap(self) -> None:
        lost = self._collect()
        if lost:
            lost += self._kill_orphans()
            for wid, status in lost:
                _report(self.report_fd, f"L {wid} {status}\n")

    def _collect(self) -> list[tuple[int, int]]:
        """Reap exited children; the workers among them that did not end cleanly."""
        lost: list[tuple[int, int]] = []
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return lost
            if pid == 0:
                return lost
            wid = self.workers.pop(pid, None)
            if wid is not None and status != 0:
                lost.append((wid, status))
            # Anything else was left by a dead worker and has just been collected.

    def _kill_orphans(self) -> list[tuple[int, int]]:
        """Kill everything below this process that no living worker holds.

        Returns the workers that died meanwhile (what they left is killed too).
        """
        lost: list[tuple[int, int]] = []
        deadline = time.monotonic() + _ORPHANS_S
        while time.monotonic() < deadline:
            orphans = _descendants(os.getpid(), skip=self.workers)
            if not orphans:
                break
            _signal_all(orphans, signal.SIGKILL)
            time.sleep(_KILL_PAUSE_S)
            lost += self._collect()
        return lost


def main(argv: list[str]) -> None:
    """Serve the grading process ``argv[1]`` (see the module docstring)."""
    parent, control_fd, report_fd = int(argv[1]), int(argv[2]), int(argv[3])
    os.set_inheritable(control_fd, False)
    os.set_inheritable(report_fd, False)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _HANDLED)  # whatever the starting thread had
    prctl = _load_prctl()
    if prctl is not None:
        # Not dumpable (and so its workers, which it forks): a process of this user, such
        # as a command or a python grader's code, cannot read their memory or descriptors
        # through /proc. Safe here: neither is ever debugged or dumped, and a command's
        # exec makes it dumpable again.
        prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    if _adopt_orphans(prctl, parent) is None:
        return
    _Supervisor(_Channel(control_fd), report_fd, prctl).serve()


if __name__ == "__main__":
    main(sys.argv)
