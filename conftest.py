"""The suite's plugins: the README examples' world and the lanes (``tests/support``).

``tests/support/readme_examples.py`` gives each README block the services its code expects;
``tests/support/lanes.py`` marks the tests of each lane (Ray, the real model, training, the
MLflow server, the wheel build) and keeps each lane on one pytest-xdist worker.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["support.readme_examples", "support.lanes"]


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Keep ``--markdown-docs`` from importing conftest files as test modules.

    Several folders have a ``conftest.py``; pytest loads each as a conftest under its own
    rules, and the docstring collector would import them again as modules named
    ``conftest``, which clash once collection visits a subfolder's conftest before the
    parent's (pytest 9.2 orders files and folders together by name).
    """
    return True if collection_path.name == "conftest.py" else None
