"""The grading side of `gradewire.tools._reaper`: start it, read its report, stop it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from gradewire.tools._capture import OutputProtocol
from gradewire.tools._process_group import signal_group, wait_for_exit

__all__ = [
    "Reports",
    "end_supervised",
    "reaper_command",
    "signal_process",
    "supervised",
    "supervised_outcome",
]

# How long past its grace the supervisor may take to report before the group is killed.
_REPORT_MARGIN_S = 10.0
_REAPER = Path(__file__).with_name("_reaper.py")


def supervised() -> bool:
    """Whether commands run under the subreaper supervisor on this system."""
    return sys.platform.startswith("linux") and bool(sys.executable) and _REAPER.is_file()


def reaper_command(argv: Sequence[str], grace: float, report_fd: int) -> list[str]:
    """The command line that runs ``argv`` under the supervisor, reporting on ``report_fd``."""
    head = [sys.executable, "-I", "-S", str(_REAPER), str(os.getpid()), repr(grace)]
    return [*head, str(report_fd), "--", *argv]


async def end_supervised(protocol: OutputProtocol, pid: int, grace: float) -> None:
    """Wait for the supervisor; on timeout or cancellation, have it end the command first."""
    if not protocol.exited.done():
        signal_process(pid, signal.SIGTERM)
    try:
        await asyncio.wait_for(asyncio.shield(protocol.exited), grace + _REPORT_MARGIN_S)
    except asyncio.CancelledError:
        signal_process(pid, signal.SIGUSR1)  # cancelled again: no more grace
        await wait_for_exit(protocol)
        raise
    except asyncio.TimeoutError:
        # A supervisor that does not answer (stopped by the command?): end the group the
        # old way; the supervisor goes with it.
        signal_group(pid, signal.SIGKILL)
        await asyncio.shield(protocol.exited)


class Reports:
    """What the supervisor writes on its report pipe: ``key=value`` lines."""

    def __init__(self, loop: asyncio.AbstractEventLoop, descriptor: int) -> None:
        self._loop = loop
        self._descriptor = descriptor
        self._data = bytearray()
        self._open = True
        self.spawned: asyncio.Future[None] = loop.create_future()
        """Done once the command is started (or could not be), or the supervisor is gone."""
        os.set_blocking(descriptor, False)
        loop.add_reader(descriptor, self._readable)

    def _readable(self) -> None:
        self._pull()
        if (b"\n" in self._data or not self._open) and not self.spawned.done():
            self.spawned.set_result(None)

    def _pull(self) -> None:
        while self._open:
            try:
                chunk = os.read(self._descriptor, 4096)
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            if not chunk:
                self._open = False
                self._loop.remove_reader(self._descriptor)
                return
            self._data += chunk

    def read(self) -> dict[str, str]:
        """Every line written so far (all of them once the supervisor has exited)."""
        self._pull()
        lines = self._data.decode("ascii", "replace").splitlines()
        pairs = (line.partition("=") for line in lines)
        return {key: value for key, _, value in pairs}

    def close(self) -> None:
        if self._open:
            self._loop.remove_reader(self._descriptor)
            self._open = False
        os.close(self._descriptor)
        if not self.spawned.done():
            self.spawned.cancel()


def supervised_outcome(
    report: Mapping[str, str],
    transport: asyncio.SubprocessTransport,
    pid: int,
    argv: Sequence[str],
) -> tuple[int, bool]:
    """The command's exit code and whether it left processes; raises its spawn failure."""
    if "spawn_error" in report:
        number = int(report["spawn_error"])
        raise OSError(number, os.strerror(number), argv[0])
    if "exit" not in report:
        # The supervisor itself was killed (by the command, or the OOM killer): what is
        # left of its group goes now; a process that left the group may survive.
        signal_group(pid, signal.SIGKILL)
        code = transport.get_returncode()
        return (-signal.SIGKILL if code is None else code), False
    return int(report["exit"]), report.get("leftovers") == "1"


def signal_process(pid: int, sig: signal.Signals) -> None:
    """Signal one process, if it is still there and ours."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)
