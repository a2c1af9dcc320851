"""Ending a command's process group where there are no child subreapers (not Linux).

Processes that leave the group (``setsid``, ``setpgid``) are out of reach here; on Linux
`run_process` runs the command under `gradewire.tools._reaper` instead, which reaches them.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys

from gradewire.tools._capture import OutputProtocol

__all__ = ["end_group_safely", "group_alive", "signal_group", "wait_for_exit"]

# How long a process that was sent SIGKILL may take to be seen exited.
_KILLED_EXIT_S = 5.0

# Once the leader has exited, checks of its group in the grace period start this often
# and back off, doubling, to a tenth of the grace (at most _POLL_MAX_S): a group that
# obeys SIGTERM is still seen gone within _POLL_S, and one that lingers costs a few
# /proc scans per grace period rather than one every _POLL_S.
_POLL_S = 0.02
_POLL_MAX_S = 0.5


async def end_group_safely(
    transport: asyncio.SubprocessTransport, protocol: OutputProtocol, pgid: int, grace: float
) -> tuple[int, bool]:
    """SIGTERM the group if anything of it runs, SIGKILL after ``grace`` (or when cancelled)."""
    ending = asyncio.ensure_future(_end_group(transport, protocol, pgid, grace))
    try:
        return await asyncio.shield(ending)
    except asyncio.CancelledError:
        # Cancelled again while ending the group: no more grace, kill now.
        signal_group(pgid, signal.SIGKILL)
        await wait_for_exit(protocol)
        raise


async def wait_for_exit(protocol: OutputProtocol) -> None:
    """Wait (a few seconds at most) until the exit of a killed process is seen.

    Only then can asyncio reap it; a task cancelled a third time stops waiting.
    """
    with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
        await asyncio.wait_for(asyncio.shield(protocol.exited), _KILLED_EXIT_S)


async def _end_group(
    transport: asyncio.SubprocessTransport, protocol: OutputProtocol, pgid: int, grace: float
) -> tuple[int, bool]:
    """SIGTERM the group if anything in it still runs, SIGKILL after the grace period.

    Returns the leader's exit code and whether anything had to be ended.
    """
    ended = False
    if not protocol.exited.done() or await group_alive(pgid):
        ended = True
        signal_group(pgid, signal.SIGTERM)
        if not await _ends_within(protocol, pgid, grace):
            signal_group(pgid, signal.SIGKILL)
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
            alive = await asyncio.wait_for(group_alive(pgid), deadline - loop.time())
        except asyncio.TimeoutError:
            return False
        if not alive:
            return True
    return False


def signal_group(pgid: int, sig: signal.Signals) -> None:
    # ESRCH: the group is gone; EPERM: what is left of it we may not signal.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def group_alive(pgid: int) -> bool:
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
