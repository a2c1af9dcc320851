"""Runs kept elsewhere than a run folder, found through entry points.

An integration may offer a reader under the ``gradewire.eval_sources`` entry point group:
``reader(ref)`` returns the `EvalRun` that ``ref`` names (an MLflow run id, an Inspect AI
log), or None when ``ref`` is not one of its runs. The core never imports an integration
by name.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import metadata

from gradewire.eval.runs._eval_run import EvalRun

__all__ = ["EVAL_SOURCES", "find_run"]

EVAL_SOURCES = "gradewire.eval_sources"


def find_run(ref: str) -> EvalRun | None:
    """The run an installed integration knows by ``ref`` (an MLflow run id), or None."""
    for entry in metadata.entry_points(group=EVAL_SOURCES):
        reader: Callable[[str], EvalRun | None] = entry.load()
        run = reader(ref)
        if run is not None:
            return run
    return None
