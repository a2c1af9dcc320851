"""The sink `gradewire demo` logs to when this package is installed."""

from __future__ import annotations

from pathlib import Path

from gradewire_mlflow._run import ui_command
from gradewire_mlflow._sink import MlflowSink

__all__ = ["demo_sink"]


def demo_sink(out: Path) -> tuple[MlflowSink, list[str]]:
    """An MLflow sink on a sqlite store inside the demo's output folder, and how to open it."""
    folder = out.resolve()
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    # Artifacts go beside the database (mlartifacts/), as for every new sqlite experiment.
    sink = MlflowSink(tracking_uri=uri, experiment_name="gradewire-demo", run_name="demo")
    return sink, [
        f"logged every step to MLflow ({uri})",
        f"  open it with: {ui_command(uri)}",
    ]
