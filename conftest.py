"""The suite's plugins: the README examples' world and the lanes (``tests/support``).

``tests/support/readme_examples.py`` gives each README block the services its code expects;
``tests/support/lanes.py`` marks the tests of each lane (Ray, the real model, training, the
MLflow server, the wheel build) and keeps each lane on one pytest-xdist worker;
``tests/support/quick_lane.py`` gives ``--quick`` (``make test-fast``), the suite without
its lanes and its slow tests.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest_plugins = [
    "support.readme_examples",
    "support.lanes",
    "support.quick_lane",
    "support.declared_integrations",
]


def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """Collect garbage after a module's last test.

    An unclosed event loop, socket or file then fails the module that left it (as a
    ResourceWarning at that test's teardown), not whichever later test the collector
    happens to run in.
    """
    if nextitem is None or nextitem.path != item.path:
        gc.collect()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """Fail the test that leaves asyncio patched by nest_asyncio, not a later victim.

    Inspect's and MLflow's sync helpers apply nest_asyncio to the whole process when they
    are called where an event loop runs; on Python 3.11 ``asyncio.run`` then no longer
    shuts down async generators or closes its loop, and a later test on the same worker
    fails for no reason of its own.
    """
    patched = hasattr(asyncio, "_nest_patched")
    result = yield
    if not patched and hasattr(asyncio, "_nest_patched"):
        raise AssertionError(
            f"{item.nodeid} left asyncio patched by nest_asyncio (a sync Inspect or MLflow "
            "helper called on a running event loop): call it off the loop"
        )
    return result


@pytest.hookimpl(wrapper=True)
def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> Iterator[list[Any]]:
    """Run the code blocks of Markdown files only, not those of Python docstrings.

    With ``--markdown-docs``, pytest-markdown-docs also imports every Python file under the
    test paths to look for fenced blocks in its docstrings. The suite's docstrings document
    tests and have none to run, and that import comes before pytest's own: a test module
    imported so cannot find the helpers beside it, and conftest files are imported again as
    modules. The Markdown collector's items for ``.py`` files are dropped.
    """
    collected: list[Any] = yield
    if file_path.suffix != ".py":
        return collected
    return [node for node in collected if not type(node).__module__.startswith("pytest_markdown")]
