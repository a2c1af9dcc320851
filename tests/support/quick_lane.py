"""The quick lane (``make test-fast``): the suite without its lanes and its slow tests.

``pytest --quick`` leaves out every test marked ``slow`` (the lanes of `support.lanes`
get the mark), every test that took ``SLOW_SECONDS`` or more when the suite was last
timed, as ``tests/slow_tests.json`` records, and every module whose tests took
``SLOW_MODULE_SECONDS`` in all. A lane's folder and a module left out are not even
imported (so torch, Ray, MLflow and the trainers stay unloaded).

The list is measured, not kept by hand: ``make slow-tests`` runs every test outside the
lanes with ``--record-slow tests/slow_tests.json`` and writes how long each took. A new
slow test runs in the quick lane until the list is measured again; ``make test`` (and CI)
runs everything whatever the list says.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from support.lanes import lane_folders

__all__ = ["SLOW_MODULE_SECONDS", "SLOW_SECONDS"]

# Relative to the rootdir, as test ids are.
SLOW_TESTS = "tests/slow_tests.json"
# Setup, call and teardown together, measured beside one other worker (``-n 2``).
SLOW_SECONDS = 0.3
# A module's tests in all: what a module fixture or a library's first import costs lands
# on whichever of its tests runs first, so such a module is left out whole.
SLOW_MODULE_SECONDS = 5.0

_QUICK = pytest.StashKey[tuple[frozenset[str], frozenset[str]]]()
_RECORD = pytest.StashKey["_Recorder"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gradewire")
    group.addoption(
        "--quick",
        action="store_true",
        help="the inner loop: leave out the lanes, tests marked slow, and what "
        f"tests/slow_tests.json times at {SLOW_SECONDS:g} s or more a test or "
        f"{SLOW_MODULE_SECONDS:g} s a module",
    )
    group.addoption(
        "--record-slow",
        metavar="PATH",
        type=Path,
        default=None,
        help="write how long each test took to PATH (JSON), for --quick to read",
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("quick"):
        timing = (config.rootpath / SLOW_TESTS).read_text(encoding="utf-8")
        config.stash[_QUICK] = _slow_listed(json.loads(timing))
    path = config.getoption("record_slow")
    if path is not None and not hasattr(config, "workerinput"):  # xdist's controller only
        config.stash[_RECORD] = _Recorder(path)
        config.pluginmanager.register(config.stash[_RECORD], "gradewire-record-slow")


def _slow_listed(timed: dict[str, Any]) -> tuple[frozenset[str], frozenset[str]]:
    """The tests of the timing that took ``SLOW_SECONDS`` or more, and the modules whose
    tests took ``SLOW_MODULE_SECONDS`` in all."""
    seconds: dict[str, float] = timed["seconds"]
    per_module: dict[str, float] = defaultdict(float)
    for nodeid, s in seconds.items():
        per_module[nodeid.partition("::")[0]] += s
    modules = frozenset(
        module
        for module, s in per_module.items()
        if s >= SLOW_MODULE_SECONDS and module.endswith(".py")
    )
    return frozenset(nodeid for nodeid, s in seconds.items() if s >= SLOW_SECONDS), modules


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Under ``--quick``, a lane's folder or a module of slow tests only is not imported."""
    if _QUICK not in config.stash:
        return None
    relative = _relative(collection_path, config.rootpath)
    if relative in config.stash[_QUICK][1]:
        return True
    folder = relative + "/" if collection_path.is_dir() else relative
    return True if any(folder.startswith(lane) for lane in lane_folders()) else None


@pytest.hookimpl(trylast=True)  # after support.lanes has marked the lanes slow
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _QUICK not in config.stash:
        return
    slow = config.stash[_QUICK][0]
    kept, left = [], []
    for item in items:
        out = item.get_closest_marker("slow") is not None or item.nodeid in slow
        (left if out else kept).append(item)
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = kept


def _relative(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


class _Recorder:
    """Adds up each test's setup, call and teardown; writes them down at the end."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seconds: dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[report.nodeid] += report.duration

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: Any) -> None:
        tests: dict[str, int] = defaultdict(int)
        for nodeid in self.seconds:
            tests[nodeid.partition("::")[0]] += 1
        timing = {
            "about": "seconds per test (setup, call and teardown; 0.1 s or more) and tests "
            "per file, outside the lanes; written by `make slow-tests`",
            "seconds": {
                nodeid: round(s, 2) for nodeid, s in sorted(self.seconds.items()) if s >= 0.1
            },
            "tests": dict(sorted(tests.items())),
        }
        self.path.write_text(json.dumps(timing, indent=1) + "\n", encoding="utf-8")
