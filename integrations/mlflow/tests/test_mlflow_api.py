"""The public surface of gradewire_mlflow: what it exports, and that importing it is cheap."""

from __future__ import annotations

import subprocess
import sys

import gradewire_mlflow


def test_all_lists_the_public_names() -> None:
    # dir(): the names are imported when first used, so the namespace holds them only then.
    public = {name for name in dir(gradewire_mlflow) if not name.startswith("_")}
    assert set(gradewire_mlflow.__all__) - {"__version__"} == public
    assert all(getattr(gradewire_mlflow, name) is not None for name in public)


def test_importing_does_not_import_mlflow() -> None:
    code = "import sys, gradewire_mlflow; print('mlflow' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", code],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert done.stdout.strip() == "False"
