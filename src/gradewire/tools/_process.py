"""Run a command with capped output and a timeout; nothing it starts outlives it.

On Linux the command runs under a supervisor (`gradewire.tools._reaper`, a child subreaper):
every process it starts stays below the supervisor even after leaving the command's process
group or session, and is ended when the command exits, times out or is cancelled. Elsewhere
the command runs in its own process group, and the group is ended (see `_process_group`).
"""

from __future__ import annotations

import asyncio
import functools
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gradewire.tools._capture import OutputProtocol, StreamCapture
from gradewire.tools._process_group import end_group_safely, signal_group
from gradewire.tools._supervisor import (
    Reports,
    end_supervised,
    reaper_command,
    signal_process,
    supervised,
    supervised_outcome,
)

__all__ = ["KILL_GRACE_S", "ProcessResult", "run_process"]

KILL_GRACE_S = 2.0
"""How long the command's processes get between SIGTERM and SIGKILL."""

# How long the output pipes may stay open once every process is dead.
_DRAIN_S = 2.0
# How long the supervisor may take to start the command (a Python interpreter's start on a
# busy machine) before the command's timeout runs anyway.
_START_S = 30.0


@dataclass(frozen=True)
class ProcessResult:
    """What a finished (or killed) command left behind."""

    exit_code: int
    """The return code; negative when a signal ended the process (Python's convention)."""
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool
    killed_leftovers: bool
    """Processes the command started were still running after it exited, and were ended."""
    output_complete: bool
    """False when a process that was not ended kept the pipes open and reading stopped."""
    contained: bool
    """Every process the command started was ended, whatever group or session it moved
    to (Linux, through a child subreaper); False where only its process group could be."""


async def run_process(
    argv: Sequence[str],
    *,
    cwd: str | None,
    env: Mapping[bytes, bytes],
    stdin_data: bytes | None,
    timeout: float,
    output_cap: int,
) -> ProcessResult:
    """Run ``argv`` in a new session and end everything it started when it is done.

    On timeout, after the command exits (to end what it left running in the background),
    and when the awaiting task is cancelled, its processes get SIGTERM, then SIGKILL after
    `KILL_GRACE_S`. Spawn failures (missing program or cwd) raise the `OSError`.
    """
    loop = asyncio.get_running_loop()
    out, err = StreamCapture(output_cap), StreamCapture(output_cap)
    protocol = OutputProtocol({1: out, 2: err}, loop)
    grace = KILL_GRACE_S
    report_r: int | None = None
    command = list(argv)
    pass_fds: tuple[int, ...] = ()
    if supervised():
        report_r, report_w = os.pipe()
        pass_fds = (report_w,)
        command = reaper_command(argv, grace, report_w)
    start = time.monotonic()
    try:
        transport, cancels = await _start(
            loop,
            protocol,
            command,
            stdin=subprocess.PIPE if stdin_data is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
            start_new_session=True,
            pass_fds=pass_fds,
        )
    except BaseException:
        if report_r is not None:
            os.close(report_r)
        raise
    pid = transport.get_pid()  # setsid made it the leader of a group with its pid
    timed_out = False
    report: dict[str, str] = {}
    reports = None if report_r is None else Reports(loop, report_r)
    try:
        if cancels > 1:
            _hurry(pid)  # cancelled twice while it started: no grace
        if cancels:
            raise asyncio.CancelledError  # while it started: it is ended like any other
        if stdin_data is not None:
            stdin = transport.get_pipe_transport(0)
            if isinstance(stdin, asyncio.WriteTransport):
                if stdin_data:
                    # Buffered by the transport and written as the command reads; a
                    # command that exits without reading it all is its own business.
                    stdin.write(stdin_data)
                stdin.close()
        if reports is not None:
            # The timeout is the command's: it starts once the supervisor has started it.
            await asyncio.wait(
                {reports.spawned, protocol.exited},
                timeout=_START_S,
                return_when=asyncio.FIRST_COMPLETED,
            )
            start = time.monotonic()
        try:
            await asyncio.wait_for(asyncio.shield(protocol.exited), timeout)
        except asyncio.TimeoutError:
            timed_out = True
        duration = time.monotonic() - start
    finally:
        exited = False
        try:
            if report_r is None:
                exit_code, leftovers = await end_group_safely(transport, protocol, pid, grace)
                exited = True
            else:
                await end_supervised(protocol, pid, grace)
                exited = True
                assert reports is not None
                report = reports.read()
                exit_code, leftovers = supervised_outcome(report, transport, pid, argv)
        finally:
            if reports is not None:
                reports.close()
            try:
                complete = await _drain(protocol) if exited else False
            finally:
                transport.close()
    if "duration" in report and not timed_out:
        duration = float(report["duration"])
    return ProcessResult(
        exit_code=exit_code,
        stdout=out.text(),
        stderr=err.text(),
        duration_s=duration,
        timed_out=timed_out,
        killed_leftovers=leftovers and not timed_out,
        output_complete=complete,
        contained=report.get("contained") == "1",
    )


async def _start(
    loop: asyncio.AbstractEventLoop,
    protocol: OutputProtocol,
    command: Sequence[str],
    *,
    pass_fds: Sequence[int],
    **options: Any,
) -> tuple[asyncio.SubprocessTransport, int]:
    """Start ``command``; also returns how often the caller was cancelled meanwhile.

    A cancellation while asyncio starts the process must not leave it running: the command
    may be running already (a shell script writes files before asyncio has connected its
    pipes), so the start is let finish and the caller ends the command as on any cancel.
    """
    starting = asyncio.ensure_future(
        loop.subprocess_exec(lambda: protocol, *command, pass_fds=pass_fds, **options)
    )

    def started(task: asyncio.Future[Any]) -> None:
        for descriptor in pass_fds:
            os.close(descriptor)  # the child has its copy

    starting.add_done_callback(started)
    try:
        transport, _ = await asyncio.shield(starting)
        return transport, 0
    except asyncio.CancelledError:
        cancels = 1
        try:
            await asyncio.wait({starting})
        except asyncio.CancelledError:
            cancels = 2
        if not starting.done():  # cancelled again before the start finished
            starting.add_done_callback(functools.partial(_end_late_start, protocol))
            raise
        if starting.cancelled() or starting.exception() is not None:
            raise
        transport, _ = starting.result()
        return transport, cancels


def _end_late_start(protocol: OutputProtocol, starting: asyncio.Future[Any]) -> None:
    if starting.cancelled() or starting.exception() is not None:
        return
    transport, _ = starting.result()
    _hurry(transport.get_pid())
    protocol.exited.add_done_callback(lambda _: transport.close())


def _hurry(pid: int) -> None:
    """End the command's processes at once: SIGKILL, no grace."""
    if supervised():
        signal_process(pid, signal.SIGUSR1)  # the supervisor kills what is below it, then exits
    else:
        signal_group(pid, signal.SIGKILL)


async def _drain(protocol: OutputProtocol) -> bool:
    """Let the output reach end of file; give up on pipes held open from outside.

    Once every process the command started is dead, only a process that was not ended
    can hold the pipes, and the grade must not wait on it.
    """
    try:
        await asyncio.wait_for(asyncio.shield(protocol.output_closed), _DRAIN_S)
    except asyncio.TimeoutError:
        return False
    return True
