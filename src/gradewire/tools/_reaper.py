"""The supervisor of one command: no process the command starts outlives it (Linux).

`run_process` starts this file as a script, ``python -I -S _reaper.py PARENT GRACE FD --
ARGV...``, in place of the command itself. It makes itself a child subreaper
(``PR_SET_CHILD_SUBREAPER``): a process that leaves the command's process group or session
(``setsid``, ``set -m`` jobs, ``setpgid``) and loses its parent is handed to this process
instead of to init, so every process the command started stays below it, whatever group it
moved to. Once the command has exited (or on SIGTERM from the grader), every process left
below gets SIGTERM, then SIGKILL after GRACE seconds, and is reaped; only then does this
process exit, after writing what happened to the file descriptor FD.

It imports the standard library only (it runs without site-packages, ``-S``) and keeps
its signals blocked, reading them one by one with ``sigtimedwait``: no handler can run
between two steps of the loop. SIGUSR1 means "no more grace": SIGKILL at once.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_STOP = frozenset({signal.SIGTERM, signal.SIGINT, signal.SIGHUP})
_HURRY = signal.SIGUSR1
_WAITED = frozenset({signal.SIGCHLD, _HURRY, *_STOP})
# Reset to their defaults in the command: Python itself ignores these two.
_DEFAULTED = frozenset({signal.SIGPIPE, signal.SIGXFSZ, *_WAITED})
_KILL_PAUSE_S = 0.005


def _become_subreaper() -> bool:
    """Adopt orphaned descendants; die with the grading process. False if not possible."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return False
    prctl.restype = ctypes.c_int
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    # If the grading process dies, this one gets SIGTERM and ends the command's processes.
    prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    return int(prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0


def _descendants() -> list[int]:
    """Every process below this one, from one scan of /proc."""
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
    found: list[int] = []
    todo = list(children.get(os.getpid(), ()))
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, ()))
    return found


def _signal_all(sig: int) -> None:
    for pid in _descendants():
        try:
            os.kill(pid, sig)
            if sig == signal.SIGTERM:
                os.kill(pid, signal.SIGCONT)  # a stopped process acts on SIGTERM once woken
        except (ProcessLookupError, PermissionError):
            pass


class _Children:
    """The command's wait status, and whether any child (adopted ones too) is left."""

    def __init__(self, command: int) -> None:
        self.command = command
        self.status: int | None = None
        self.ended_at = 0.0
        self.left = True

    def reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                self.left = False
                return
            if pid == 0:
                return
            if pid == self.command:
                self.status = status
                self.ended_at = time.monotonic()


def _supervise(children: _Children, grace: float) -> bool:
    """Wait for the command, then end what it left; True if anything was left running."""
    leftovers = False
    deadline: float | None = None  # set once every process below is being ended
    hurry = False
    while True:
        if deadline is None:
            info = signal.sigtimedwait(_WAITED, 3600.0)
        elif not hurry and (remaining := deadline - time.monotonic()) > 0:
            info = signal.sigtimedwait(_WAITED, remaining)
        else:
            info = None
        if info is not None and info.si_signo == _HURRY:
            hurry = True
            deadline = time.monotonic() if deadline is None else deadline
        elif info is not None and info.si_signo in _STOP and deadline is None:
            deadline = time.monotonic() + grace
            _signal_all(signal.SIGTERM)
        children.reap()
        if not children.left:
            return leftovers
        if children.status is not None and deadline is None:
            # The command is done and something it started still runs.
            leftovers = True
            deadline = time.monotonic() + grace
            _signal_all(signal.SIGTERM)
        if deadline is not None and (hurry or time.monotonic() >= deadline):
            while children.left:
                _signal_all(signal.SIGKILL)
                time.sleep(_KILL_PAUSE_S)
                children.reap()
            return leftovers


def main(argv: list[str]) -> None:
    """Run the command of ``argv`` (see the module docstring) and report on FD."""
    parent, grace, report_fd, command = int(argv[1]), float(argv[2]), int(argv[3]), argv[5:]
    os.set_inheritable(report_fd, False)
    signal.pthread_sigmask(signal.SIG_BLOCK, _WAITED)
    contained = _become_subreaper()
    if os.getppid() != parent:
        return  # the grader died before the death signal was armed: run nothing
    start = time.monotonic()
    try:
        pid = os.posix_spawnp(
            command[0], command, os.environ, setsigmask=(), setsigdef=tuple(_DEFAULTED)
        )
    except OSError as exc:
        os.write(report_fd, f"spawn_error={exc.errno}\n".encode())
        return
    os.write(report_fd, b"spawned=1\n")
    children = _Children(pid)
    leftovers = _supervise(children, grace)
    lines = [f"contained={int(contained)}", f"leftovers={int(leftovers)}"]
    if children.status is not None:
        lines.append(f"exit={os.waitstatus_to_exitcode(children.status)}")
        lines.append(f"duration={children.ended_at - start:.6f}")
    os.write(report_fd, ("\n".join(lines) + "\n").encode())


if __name__ == "__main__":
    main(sys.argv)
