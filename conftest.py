"""The README examples' world (tests/readme_examples.py), and the lanes of the suite.

A lane is a service that is costly to start or a run that wants the machine's cores to
itself. Every test of a lane carries its marker (``-m "not ray"`` leaves the lane out) and,
under pytest-xdist with ``--dist loadgroup`` (``make test``), runs on one worker, one test
after another, so that a run holds one Ray cluster, one llama.cpp server, one MLflow
server of the MLflow folder, one training run and one wheel build at a time. Lanes are
also ``slow``, as are modules marked so by hand; ``make test-fast`` leaves out every
``slow`` test (``-m "not slow"``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest_plugins = ["readme_examples"]

# Folder of the tests (relative to the repository) -> their lane.
_FOLDER_LANES = {
    "integrations/ray/tests/": "ray",
    "tests/judges/real_model/": "real_model",
    "integrations/transformers/tests/": "training",
    "integrations/mlflow/tests/": "mlflow_server",
    "tests/test_packaging.py": "packaging",
}
# What a README block's code uses -> its lane (the block runs in the lane's worker, after the
# lane's own tests: a Ray block joins the session's cluster rather than starting one).
_CODE_LANES = {
    re.compile(r"\bray\b|\bgradewire_ray\b"): "ray",
    re.compile(r"\b(GRPO|RLOO)Trainer\b"): "training",
    re.compile(r"\bmlflow\b"): "mlflow_server",
}
_ROOT = Path(__file__).resolve().parent


def lane_of(item: pytest.Item) -> str | None:
    """The lane a test belongs to, or None for a test that runs anywhere."""
    code = getattr(item, "code", None)
    if isinstance(code, str):  # a README block (pytest-markdown-docs)
        return next((lane for pattern, lane in _CODE_LANES.items() if pattern.search(code)), None)
    try:
        where = Path(item.path).resolve().relative_to(_ROOT).as_posix()
    except ValueError:
        return None
    return next((lane for folder, lane in _FOLDER_LANES.items() if where.startswith(folder)), None)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Give each test of a lane its lane's marker, ``slow`` and its lane's xdist group."""
    for item in items:
        lane = lane_of(item)
        if lane is not None:
            item.add_marker(getattr(pytest.mark, lane))
            item.add_marker(pytest.mark.slow)
            item.add_marker(pytest.mark.xdist_group(lane))


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Keep ``--markdown-docs`` from importing conftest files as test modules.

    Several folders have a ``conftest.py``; pytest loads each as a conftest under its own
    rules, and the docstring collector would import them again as modules named
    ``conftest``, which clash once collection visits a subfolder's conftest before the
    parent's (pytest 9.2 orders files and folders together by name).
    """
    return True if collection_path.name == "conftest.py" else None
