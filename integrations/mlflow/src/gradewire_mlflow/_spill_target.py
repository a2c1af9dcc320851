"""The MlflowSink that ``gradewire sync`` delivers a spill directory's MLflow entries with.

Offered under the ``gradewire.spill_targets`` entry point group as ``mlflow``: given the
delivery target a `MlflowSink` left with its spill files (`MlflowSink.delivery_target`),
it makes a sink that logs to the same run, or to the run the user names instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gradewire import InvalidInputError
from gradewire_mlflow._sink import MlflowSink

__all__ = ["sink_for_target"]


def _text(target: Mapping[str, Any], *path: str) -> str | None:
    value: Any = target
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value if isinstance(value, str) and value else None


def sink_for_target(
    target: Mapping[str, Any],
    *,
    closed: bool,
    tracking_uri: str | None = None,
    run_id: str | None = None,
) -> MlflowSink:
    """A sink for the run of ``target``, or for ``run_id`` at ``tracking_uri`` instead.

    A target whose run was never created (MLflow was down from the start) gets a new run,
    started as its sink would have (experiment, name, tags); it is ended FINISHED once
    everything is in it if the process closed its sink (``closed``), else KILLED.

    Raises:
        InvalidInputError: The target says neither a run nor how to start one.
    """
    uri = tracking_uri or _text(target, "tracking_uri")
    if uri is None:
        raise InvalidInputError("the spill files name no MLflow tracking URI; pass --tracking-uri")
    run = run_id or _text(target, "run", "run_id")
    if run is not None:
        return MlflowSink(tracking_uri=uri, run_id=run, all_ranks=True)
    new_run = target.get("new_run")
    if not isinstance(new_run, Mapping):
        raise InvalidInputError(
            "the spill files name no MLflow run and not how to start one; pass --mlflow-run-id"
        )
    tags = new_run.get("tags")
    sink = MlflowSink(
        tracking_uri=uri,
        experiment_name=_text(new_run, "experiment_name"),
        run_name=_text(new_run, "run_name"),
        tags={str(k): str(v) for k, v in tags.items()} if isinstance(tags, Mapping) else None,
        artifact_location=_text(new_run, "artifact_location"),
        all_ranks=True,
    )
    experiment_id = _text(new_run, "experiment_id")
    if experiment_id is not None and sink._target.experiment_name is None:
        sink._target.experiment_id = experiment_id
    if not closed:
        sink._end_status = "KILLED"  # its process never closed it: it did not finish
    return sink
