"""The environment of a child process a test starts: this one's, with more on its path."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
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
