"""The integrations pyproject.toml declares, findable even through a stale editable install.

An editable install records its entry points when it is made: one made before
pyproject.toml changed its ``gradewire.integrations`` entries lacks them until reinstalled
(``pip install -e .``). Then this plugin writes the declared entries into a distribution of
its own and puts it first on ``sys.path`` (and on ``PYTHONPATH`` for the processes the
tests start), where `importlib.metadata` finds it as it finds an installed one. With a
fresh install it does nothing.
"""

from __future__ import annotations

import os
import sys
import tempfile
from importlib import metadata
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from gradewire.core._integrations import INTEGRATIONS_GROUP

PYPROJECT = Path(__file__).parents[2] / "pyproject.toml"


def declared() -> dict[str, str]:
    """The ``gradewire.integrations`` entries of pyproject.toml: name to ``module:attr``."""
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    return dict(project["entry-points"][INTEGRATIONS_GROUP])


def pytest_configure(config: pytest.Config) -> None:
    wanted = declared()
    installed = {e.name: e.value for e in metadata.entry_points(group=INTEGRATIONS_GROUP)}
    if all(installed.get(name) == value for name, value in wanted.items()):
        return
    root = Path(tempfile.mkdtemp(prefix="gradewire-integrations-"))
    info = root / "gradewire_declared_integrations-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: gradewire-declared-integrations\nVersion: 0\n",
        encoding="utf-8",
    )
    lines = "".join(f"{name} = {value}\n" for name, value in wanted.items())
    (info / "entry_points.txt").write_text(f"[{INTEGRATIONS_GROUP}]\n{lines}", encoding="utf-8")
    sys.path.insert(0, str(root))
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = f"{root}{os.pathsep}{old}" if old else str(root)
