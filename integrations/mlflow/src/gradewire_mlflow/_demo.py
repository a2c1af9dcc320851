"""The sink `gradewire demo` logs to when this package is installed."""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path

from gradewire_mlflow._sink import MlflowSink

__all__ = ["demo_sink"]


def demo_sink(out: Path) -> tuple[MlflowSink, list[str]]:
    """An MLflow sink on a sqlite store inside the demo's output folder, and how to open it."""
    folder = out.resolve()
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    sink = MlflowSink(
        tracking_uri=uri,
        experiment_name="gradewire-demo",
        run_name="demo",
        artifact_location=(folder / "mlartifacts").as_uri(),
    )
    ui = [*_mlflow_command(), "ui", "--backend-store-uri", uri]
    return sink, [
        f"logged every step to MLflow ({uri})",
        f"  open it with: {shlex.join(ui)}",
    ]


def _mlflow_command() -> list[str]:
    """This interpreter's `mlflow` command by its full path: it runs with no venv active."""
    beside = shutil.which("mlflow", path=str(Path(sys.executable).parent))
    if beside is not None:
        return [str(Path(beside).absolute())]
    return [str(Path(sys.executable).absolute()), "-m", "mlflow"]
