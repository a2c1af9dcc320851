"""Run a command with capped output and a timeout; nothing it starts outlives it.

On Linux the command runs under this process's supervisor (`gradewire.tools._reaper`,
started once and shared): a worker that is a child subreaper runs it, so every process it
starts stays below that worker even after leaving the command's process group or session,
and is ended when the command exits, times out or is cancelled. Elsewhere the command runs
in its own process group, and the group is ended (see `_process_group`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gradewire.core._errors import GradingError
from gradewire.tools._capture import OutputProtocol, PipeReader, StreamCapture
from gradewire.tools._process_group import end_group_safely, signal_group
from gradewire.tools._supervisor import Command, Report, start_command, supervised

__all__ = ["KILL_GRACE_S", "ProcessResult", "run_process"]

KILL_GRACE_S = 2.0
"""How long the command's processes get between SIGTERM and SIGKILL."""

# How long the output pipes may stay open once every process is dead.
_DRAIN_S = 2.0
# How long a new worker (or the supervisor itself, on a process's first command) may take
# to start, on a busy machine, before the command's timeout runs anyway.
_START_S = 30.0
# How long past its grace a worker may take to report before the supervisor kills it.
_REPORT_MARGIN_S = 10.0
# How long a worker the supervisor was told to kill may take to be reported gone.
_KILLED_S = 10.0


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
    timeout: float | None,
    output_cap: int,
) -> ProcessResult:
    """Run ``argv`` in a new session and end everything it started when it is done.

    On timeout, after the command exits (to end what it left running in the background),
    and when the awaiting task is cancelled, its processes get SIGTERM, then SIGKILL after
    `KILL_GRACE_S`. Spawn failures (missing program or cwd) raise the `OSError`.
    """
    if supervised():
        return await _run_supervised(argv, cwd, env, stdin_data, timeout, output_cap)
    return await _run_in_group(argv, cwd, env, stdin_data, timeout, output_cap)


async def _run_supervised(
    argv: Sequence[str],
    cwd: str | None,
    env: Mapping[bytes, bytes],
    stdin_data: bytes | None,
    timeout: float | None,
    output_cap: int,
) -> ProcessResult:
    loop = asyncio.get_running_loop()
    out, err = StreamCapture(output_cap), StreamCapture(output_cap)
    protocol = OutputProtocol({1: out, 2: err}, loop)
    grace = KILL_GRACE_S
    directory = _current_directory() if cwd is None else cwd
    output = PipeReader(loop, protocol)
    stdin_r = stdin_w = None
    try:
        fds = list(output.write_ends)
        if stdin_data is not None:
            stdin_r, stdin_w = os.pipe()
            fds.append(stdin_r)
        # No await until the command is sent: nothing can cancel this in between.
        command = start_command(
            loop, argv, cwd=directory, env=env, grace=grace, fds=fds, stdin=stdin_r is not None
        )
    except BaseException:
        output.close()
        if stdin_w is not None:
            os.close(stdin_w)
        raise
    finally:
        output.close_write_ends()
        if stdin_r is not None:
            os.close(stdin_r)
    feeding: asyncio.WriteTransport | None = None
    timed_out = False
    try:
        if stdin_w is not None:
            assert stdin_data is not None
            pipe, stdin_w = os.fdopen(stdin_w, "wb", buffering=0), None  # it owns it now
            feeding = await _feed(loop, pipe, stdin_data)
        await command.started(_START_S)  # the timeout is the command's own
        start = time.monotonic()
        await asyncio.wait({command.done}, timeout=timeout)
        timed_out = not command.done.done()
        duration = time.monotonic() - start
    finally:
        exited = False
        try:
            report = await _end_supervised(command, grace)
            exited = True
        finally:
            if stdin_w is not None:
                os.close(stdin_w)
            if feeding is not None:
                feeding.close()
            try:
                complete = await _drain(protocol) if exited else False
            finally:
                output.close()
    if report.duration is not None and not timed_out:
        duration = report.duration
    return ProcessResult(
        exit_code=report.exit_code,
        stdout=out.text(),
        stderr=err.text(),
        duration_s=duration,
        timed_out=timed_out,
        killed_leftovers=report.leftovers and not timed_out,
        output_complete=complete,
        contained=report.contained,
    )


def _current_directory() -> str:
    # The supervisor's workers run commands in the directory they are given: "this
    # process's directory" is looked up now, as a command started from here would get it.
    try:
        return os.getcwd()
    except FileNotFoundError:
        raise GradingError(
            "this process's current directory no longer exists; pass the directory the "
            "command should run in as cwd="
        ) from None


async def _feed(loop: asyncio.AbstractEventLoop, pipe: Any, data: bytes) -> asyncio.WriteTransport:
    """Write ``data`` to the command's stdin as it reads, then close it."""
    transport, _ = await loop.connect_write_pipe(asyncio.BaseProtocol, pipe)
    if data:
        # Buffered by the transport and written as the command reads; a command that
        # exits without reading it all is its own business.
        transport.write(data)
    transport.close()
    return transport


async def _end_supervised(command: Command, grace: float) -> Report:
    """Wait for the command's report; on timeout or cancellation, have it ended first."""
    if not command.done.done():
        command.terminate()
    try:
        return await asyncio.wait_for(asyncio.shield(command.done), grace + _REPORT_MARGIN_S)
    except asyncio.CancelledError:
        command.hurry()  # cancelled again: no more grace
        with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(command.done), _KILLED_S)
        if not command.done.done():
            command.kill()
        raise
    except asyncio.TimeoutError:
        # A worker that does not answer (stopped by the command?): the supervisor kills
        # it, and then everything that was below it.
        command.kill()
    try:
        return await asyncio.wait_for(asyncio.shield(command.done), _KILLED_S)
    except asyncio.TimeoutError:
        raise GradingError(
            "the command's worker process did not answer, and the supervisor did not "
            "report it killed; its processes may still run"
        ) from None


async def _run_in_group(
    argv: Sequence[str],
    cwd: str | None,
    env: Mapping[bytes, bytes],
    stdin_data: bytes | None,
    timeout: float | None,
    output_cap: int,
) -> ProcessResult:
    loop = asyncio.get_running_loop()
    out, err = StreamCapture(output_cap), StreamCapture(output_cap)
    protocol = OutputProtocol({1: out, 2: err}, loop)
    grace = KILL_GRACE_S
    start = time.monotonic()
    transport, cancels = await _start(
        loop,
        protocol,
        list(argv),
        stdin=subprocess.PIPE if stdin_data is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=env,
        start_new_session=True,
    )
    pid = transport.get_pid()  # setsid made it the leader of a group with its pid
    timed_out = False
    try:
        if cancels > 1:
            signal_group(pid, signal.SIGKILL)  # cancelled twice while it started: no grace
        if cancels:
            raise asyncio.CancelledError  # while it started: it is ended like any other
        if stdin_data is not None:
            stdin = transport.get_pipe_transport(0)
            if isinstance(stdin, asyncio.WriteTransport):
                if stdin_data:
                    stdin.write(stdin_data)  # as in _feed
                stdin.close()
        try:
            await asyncio.wait_for(asyncio.shield(protocol.exited), timeout)
        except asyncio.TimeoutError:
            timed_out = True
        duration = time.monotonic() - start
    finally:
        exited = False
        try:
            exit_code, leftovers = await end_group_safely(transport, protocol, pid, grace)
            exited = True
        finally:
            try:
                complete = await _drain(protocol) if exited else False
            finally:
                transport.close()
    return ProcessResult(
        exit_code=exit_code,
        stdout=out.text(),
        stderr=err.text(),
        duration_s=duration,
        timed_out=timed_out,
        killed_leftovers=leftovers and not timed_out,
        output_complete=complete,
        contained=False,
    )


async def _start(
    loop: asyncio.AbstractEventLoop,
    protocol: OutputProtocol,
    command: Sequence[str],
    **options: Any,
) -> tuple[asyncio.SubprocessTransport, int]:
    """Start ``command``; also returns how often the caller was cancelled meanwhile.

    A cancellation while asyncio starts the process must not leave it running: the command
    may be running already (a shell script writes files before asyncio has connected its
    pipes), so the start is let finish and the caller ends the command as on any cancel.
    """
    starting = asyncio.ensure_future(loop.subprocess_exec(lambda: protocol, *command, **options))
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
    signal_group(transport.get_pid(), signal.SIGKILL)
    protocol.exited.add_done_callback(lambda _: transport.close())


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
