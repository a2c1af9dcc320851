"""Run a command in its own process group: capped output, a timeout, and no orphans."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gradewire.tools._capture import OutputProtocol, StreamCapture

__all__ = ["KILL_GRACE_S", "ProcessResult", "run_process"]

KILL_GRACE_S = 2.0
"""How long a process group gets between SIGTERM and SIGKILL."""

# How long the output pipes may stay open once the group is dead.
_DRAIN_S = 2.0
# Once the leader has exited, checks of its group in the grace period start this often
# and back off, doubling, to a tenth of the grace (at most _POLL_MAX_S): a group that
# obeys SIGTERM is still seen gone within _POLL_S, and one that lingers costs a few
# /proc scans per grace period rather than one every _POLL_S.
_POLL_S = 0.02
_POLL_MAX_S = 0.5


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
    """Processes of the group were still running after the command exited, and were ended."""
    output_complete: bool
    """False when a process outside the group kept the pipes open and reading stopped."""


async def run_process(
    argv: Sequence[str],
    *,
    cwd: str | None,
    env: Mapping[bytes, bytes],
    stdin_data: bytes | None,
    timeout: float,
    output_cap: int,
) -> ProcessResult:
    """Run ``argv`` in a new session and process group, and always end the whole group.

    On timeout, after the command exits (to end what it left running in the background),
    and when the awaiting task is cancelled, the group gets SIGTERM, then SIGKILL after
    `KILL_GRACE_S`. Spawn failures (missing program or cwd) raise the `OSError` as is.
    """
    loop = asyncio.get_running_loop()
    out, err = StreamCapture(output_cap), StreamCapture(output_cap)
    protocol = OutputProtocol({1: out, 2: err}, loop)
    start = time.monotonic()
    transport, _ = await loop.subprocess_exec(
        lambda: protocol,
        *argv,
        stdin=subprocess.PIPE if stdin_data is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=env,
        start_new_session=True,
    )
    pgid = transport.get_pid()  # setsid made the child the leader of a group with its pid
    timed_out = False
    try:
        if stdin_data is not None:
            stdin = transport.get_pipe_transport(0)
            if isinstance(stdin, asyncio.WriteTransport):
                if stdin_data:
                    # Buffered by the transport and written as the command reads; a
                    # command that exits without reading it all is its own business.
                    stdin.write(stdin_data)
                stdin.close()
        try:
            await asyncio.wait_for(asyncio.shield(protocol.exited), timeout)
        except asyncio.TimeoutError:
            timed_out = True
        duration = time.monotonic() - start
    finally:
        try:
            exit_code, leftovers = await _end_group_safely(transport, protocol, pgid)
        finally:
            try:
                complete = await _drain(protocol)
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
    )


async def _drain(protocol: OutputProtocol) -> bool:
    """Let the output reach end of file; give up on pipes held open from outside.

    Once the group is dead only a process that left it (setsid) can hold the pipes,
    and the grade must not wait on it.
    """
    try:
        await asyncio.wait_for(asyncio.shield(protocol.output_closed), _DRAIN_S)
    except asyncio.TimeoutError:
        return False
    return True


async def _end_group_safely(
    transport: asyncio.SubprocessTransport, protocol: OutputProtocol, pgid: int
) -> tuple[int, bool]:
    ending = asyncio.ensure_future(_end_group(transport, protocol, pgid))
    try:
        return await asyncio.shield(ending)
    except asyncio.CancelledError:
        # Cancelled again while ending the group: no more grace, kill now.
        _signal_group(pgid, signal.SIGKILL)
        raise


async def _end_group(
    transport: asyncio.SubprocessTransport, protocol: OutputProtocol, pgid: int
) -> tuple[int, bool]:
    """SIGTERM the group if anything in it still runs, SIGKILL after the grace period.

    Returns the leader's exit code and whether anything had to be ended.
    """
    ended = False
    if not protocol.exited.done() or await _group_alive(pgid):
        ended = True
        _signal_group(pgid, signal.SIGTERM)
        if not await _ends_within(protocol, pgid, KILL_GRACE_S):
            _signal_group(pgid, signal.SIGKILL)
        await asyncio.shield(protocol.exited)
    code = transport.get_returncode()
    assert code is not None
    return code, ended


async def _ends_within(protocol: OutputProtocol, pgid: int, grace: float) -> bool:
    """Whether the leader exits and nothing of its group runs within ``grace`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace
    interval, ceiling = _POLL_S, min(max(grace / 10, _POLL_S), _POLL_MAX_S)
    while (remaining := deadline - loop.time()) > 0:
        if protocol.exited.done():
            await asyncio.sleep(min(interval, remaining))
            interval = min(interval * 2, ceiling)
        else:
            # The leader's exit wakes this at once; no polling while it runs.
            await asyncio.wait((protocol.exited,), timeout=remaining)
        if not protocol.exited.done():
            continue
        try:
            # Bounded, so a default executor busy with other work cannot delay SIGKILL.
            alive = await asyncio.wait_for(_group_alive(pgid), deadline - loop.time())
        except asyncio.TimeoutError:
            return False
        if not alive:
            return True
    return False


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    # ESRCH: the group is gone; EPERM: what is left of it we may not signal.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def _group_alive(pgid: int) -> bool:
    """Whether any process of the group still runs (zombies do not count)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False  # the usual answer, and it needs no scan
    except PermissionError:
        return True
    if not sys.platform.startswith("linux"):
        return True
    # killpg also reaches zombies, which an init that does not reap (containers) keeps
    # forever; only /proc tells a running member from a dead one. Reading every
    # /proc/*/stat costs time in proportion to the machine's process count, so it runs
    # in a worker thread and never stalls the event loop (and the other samples).
    return await asyncio.to_thread(_member_running, pgid)


def _member_running(pgid: int) -> bool:
    """Whether /proc lists a process of group ``pgid`` that is not a zombie (blocking)."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return True
    for name in entries:
        if not name.isdigit():
            continue
        # os.open/os.read rather than open(): no file object, about a quarter less time.
        try:
            descriptor = os.open(f"/proc/{name}/stat", os.O_RDONLY)
        except OSError:
            continue  # the process ended since the listing
        try:
            stat = os.read(descriptor, 4096)  # about 300 bytes; one read returns it whole
        except OSError:
            continue
        finally:
            os.close(descriptor)
        # "pid (comm) state ppid pgrp ..."; comm may hold spaces and parentheses.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 2 and fields[0] not in (b"Z", b"X") and int(fields[2]) == pgid:
            return True
    return False
