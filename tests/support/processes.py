"""Child processes a test starts: their environment, and the ones it drives line by line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path


def child_env(*on_path: Path, drop: Iterable[str] = (), **overrides: str) -> dict[str, str]:
    """``os.environ`` with ``on_path`` first on the child's ``PYTHONPATH``, then this
    process's ``sys.path`` (so the child imports what the test imports), ``drop`` removed
    and ``overrides`` set."""
    dropped = set(drop)
    env = {key: value for key, value in os.environ.items() if key not in dropped}
    env["PYTHONPATH"] = os.pathsep.join([*map(str, on_path), *sys.path])
    env.update(overrides)
    return env


class SpillChild:
    """A process holding a sink that spills, driven by lines: commands on its stdin, answers
    on its stdout. Its first line says how many spilled entries it adopted (``adopted N``).
    """

    def __init__(self, command: list[str], env: dict[str, str], what: str) -> None:
        self.what = what
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )
        self.adopted = int(self.line().removeprefix("adopted "))

    def line(self) -> str:
        assert self.process.stdout is not None
        text = self.process.stdout.readline()
        assert text, f"the {self.what} exited with {self.process.wait()}"
        return text.rstrip("\n")

    def send(self, command: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()

    def ask(self, command: str) -> str:
        self.send(command)
        return self.line()

    def kill(self) -> None:
        """SIGKILL (if it still runs), reaped, its pipes closed."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    """Poll ``condition`` until it holds (a liveness guard, not a timing assertion)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting ({timeout:.0f}s): {what}"
        time.sleep(0.02)
