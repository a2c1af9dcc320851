"""The lanes of the suite, and the pytest-xdist scheduler that keeps each on one worker.

A lane is a service that is costly to start or a run that wants the machine's cores to
itself: the Ray cluster, the llama.cpp model server, a TRL training run, the MLflow
server, the wheel build. Every test of a lane carries its marker (``-m "not ray"`` leaves
the lane out) and ``slow`` (``make test-fast`` leaves every ``slow`` test out).

Under ``pytest -n N --dist loadgroup`` (``make test``) a lane's tests run on one worker, one
after another, so that a run holds one Ray cluster, one llama.cpp server, one MLflow
server, one training run and one wheel build at a time. pytest-xdist's own groups cannot
do this under pytest 9.2: xdist renames a grouped test by writing ``item._nodeid``, which
pytest 9.2 no longer reads (``Node.nodeid`` comes from ``Node._id``), so every
``xdist_group`` mark is silently ignored. `support.lane_scheduling.LaneScheduling` decides
the group from the test id itself instead, on the controller, with the same rules the
markers use.

Tests outside a lane are grouped by module, as ``--dist loadscope`` does: a module's
fixtures are set up once, on one worker. The lanes are handed out first, longest first
(`LANES`), then the modules, biggest first: the run's tail is short modules, not a lane
started late.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import pytest

__all__ = ["LANES", "lane_folders", "lane_of"]

ROOT = Path(__file__).resolve().parents[2]

# Folder or file of the tests (relative to the repository) -> their lane.
_FOLDER_LANES = {
    "integrations/ray/tests/": "ray",
    "tests/judges/real_model/": "real_model",
    "integrations/transformers/tests/": "training",
    "integrations/mlflow/tests/": "mlflow_server",
    "tests/test_packaging.py": "packaging",
}
# What a Markdown block's code uses -> its lane (the block runs in the lane's worker, after
# or between the lane's own tests: a Ray block joins the session's cluster rather than
# starting one).
_CODE_LANES = {
    re.compile(r"\bray\b|\bgradewire_ray\b"): "ray",
    re.compile(r"\b(GRPO|RLOO)Trainer\b"): "training",
    re.compile(r"\bmlflow\b"): "mlflow_server",
}
# Longest first: the scheduler hands the lanes out in this order, before anything else.
LANES = ("real_model", "ray", "mlflow_server", "packaging", "training")
# pytest-markdown-docs names a block ``README.md::[CodeFence#25][line:1198]``: the line of
# its opening fence, counted from 1.
_FENCE = re.compile(r"\[line:(\d+)\]")


def lane_of(nodeid: str) -> str | None:
    """The lane of the test ``nodeid`` (relative to the repository), or None."""
    path, _, rest = nodeid.partition("::")
    if path.endswith(".md"):
        found = _FENCE.search(rest)
        code = _fence_code(path, int(found.group(1))) if found else ""
        return next((lane for pattern, lane in _CODE_LANES.items() if pattern.search(code)), None)
    return next((lane for folder, lane in _FOLDER_LANES.items() if path.startswith(folder)), None)


def lane_folders() -> tuple[str, ...]:
    """The folders (and files) whose every test is in a lane, relative to the repository."""
    return tuple(_FOLDER_LANES)


@functools.cache
def _lines(path: str) -> tuple[str, ...]:
    return tuple((ROOT / path).read_text(encoding="utf-8").splitlines())


def _fence_code(path: str, line: int) -> str:
    """The code of the fenced block that opens at ``line`` of the Markdown file ``path``."""
    lines = _lines(path)
    code: list[str] = []
    for text in lines[line:]:
        if text.lstrip().startswith("```"):
            break
        code.append(text)
    return "\n".join(code)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Give each test of a lane its lane's marker and ``slow``."""
    for item in items:
        lane = lane_of(item.nodeid)
        if lane is not None:
            item.add_marker(getattr(pytest.mark, lane))
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`LaneScheduling` for ``--dist loadgroup``; xdist's own for any other ``--dist``.

    pytest-xdist is imported only here: the compatibility venvs run the suite without it.
    """
    if config.getvalue("dist") != "loadgroup":
        return None
    from support.lane_scheduling import LaneScheduling

    return LaneScheduling(config, log)
