"""A pool worker's life (standard library only): it answers calls, and dies with its parent.

A worker answers the calls on its socket until the socket closes (`answer_calls`).

A worker busy in a long check never reads its socket, so it cannot see its caller go
away there. Two guards, called first thing in the worker (`die_with_parent`):

- On Linux, ``PR_SET_PDEATHSIG`` has the kernel SIGKILL the worker when its parent dies,
  whatever the worker is doing (a sympy power computed in C holds the GIL for minutes, so
  no Python-level guard would run). The signal follows the *thread* that forked the
  worker, not its process: the pool forks its workers from one thread of its own that
  lives as long as the process (`gradewire.helpers._math_pool`), never from a caller's
  thread, which may end while its worker still serves others.
- Everywhere, a watchdog thread waits for the socket to hang up and checks that the parent
  is still the parent, for systems without the death signal and for workers started
  another way; it runs whenever the worker's Python code lets it.
"""

from __future__ import annotations

import ctypes
import os
import select
import signal
import sys
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

__all__ = ["answer_calls", "die_with_parent"]

_PR_SET_PDEATHSIG = 1
# How often the watchdog checks its parent when the socket stays quiet.
_CHECK_S = 1.0


def die_with_parent(parent: int, socket_fd: int) -> None:
    """End this process when ``parent`` dies or the socket ``socket_fd`` hangs up."""
    if sys.platform.startswith("linux"):
        try:
            prctl = ctypes.CDLL(None, use_errno=True).prctl
            prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass  # the watchdog alone
    if os.getppid() != parent:
        os._exit(0)  # the parent died before the death signal was armed
    threading.Thread(
        target=_watch, args=(parent, socket_fd), name="gradewire-worker-watchdog", daemon=True
    ).start()


def _watch(parent: int, socket_fd: int) -> None:
    poller = select.poll()
    poller.register(socket_fd, 0)  # hang-up and errors only: the calls are not ours to read
    while True:
        events = poller.poll(_CHECK_S * 1000)
        if events or os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)


def answer_calls(conn: Connection, call: Callable[..., Any]) -> None:
    """Answer each call's arguments on ``conn`` with ``(True, result)`` or ``(False, error)``.

    An error is ``(type name, message)``, cut to 2,000 characters: the caller decides what
    a failure means. Returns when the socket closes, from either end.
    """
    while True:
        try:
            args = conn.recv()
        except (EOFError, OSError):
            return
        try:
            result: tuple[bool, Any] = (True, call(*args))
        except BaseException as exc:
            result = (False, (type(exc).__name__, str(exc)[:2000]))
        try:
            conn.send(result)
        except OSError:
            return
