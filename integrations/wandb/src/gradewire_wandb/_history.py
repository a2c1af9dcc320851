"""An offline W&B run's history, step by step: ``gradewire health RUN_FOLDER`` reads it.

The ``run_history.wandb`` entry point. The steps are numbered by the x axis of
gradewire's keys: the ``define_metric`` step they were logged against (``train/global_step``
under the HF trainer, a `WandbSink`'s ``step_metric``), else W&B's own ``_step``.
"""

from __future__ import annotations

from pathlib import Path

from gradewire.core import LogValue
from gradewire_wandb._offline_run import read_offline_run
from gradewire_wandb._run_records import OfflineRunError, find_offline_runs

__all__ = ["read_wandb_history"]

_COUNT = "/score/count"
_FINISH_WAIT_S = 10.0


def read_wandb_history(ref: str) -> list[tuple[int, dict[str, LogValue]]] | None:
    """The ``(step, logs)`` pairs of the offline W&B run ``ref`` names, in step order.

    ``ref`` is an ``offline-run-<time>-<id>`` folder, its ``run-<id>.wandb`` file, a
    folder holding one such run (W&B's ``dir``), or ``wandb:`` followed by one of those.
    None when ``ref`` names none of them (another reader's).

    Raises:
        OfflineRunError: ``ref`` is a folder of several runs, or not a run folder.
        IncompleteRunError: The run did not finish (see `read_offline_run`).
    """
    text = ref.strip()
    named = text.startswith("wandb:")
    path = Path(text[len("wandb:") :] if named else text)
    if not path.exists():
        return None if not named else _missing(path)
    runs = find_offline_runs(path) if path.is_dir() else []
    if len(runs) == 1 and not any(path.glob("run-*.wandb")):
        path = runs[0]  # W&B's dir (or its wandb/ folder) holding one run
    is_run = path.suffix == ".wandb" or any(path.glob("run-*.wandb")) or bool(runs)
    if not (named or is_run):
        return None
    # run.finish() may return before W&B's service has written the exit record: wait a
    # little for it (a run still being written is refused after that, saying so).
    run = read_offline_run(path, wait=_FINISH_WAIT_S)
    keys = {key for row in run.history for key in row if key.endswith(_COUNT)}
    axes = {run.x_axis(key) for key in keys}
    axis = axes.pop() if len(axes) == 1 else "_step"
    merged: dict[int, dict[str, LogValue]] = {}
    for step, logs in run.steps(axis):
        merged.setdefault(step, {}).update(logs)
    return sorted(merged.items())


def _missing(path: Path) -> list[tuple[int, dict[str, LogValue]]]:
    raise OfflineRunError(f"{path} does not exist: pass an offline-run-<time>-<id> folder")
