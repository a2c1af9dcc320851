"""An MLflow run's metric history, step by step: ``gradewire health mlflow:RUN_ID`` reads it.

The ``run_history.mlflow`` entry point. Each metric's points are read with
``MlflowClient.get_metric_history`` and gathered by step; a key logged twice at one step
(a retried batch) keeps its latest point, as MLflow's charts do.
"""

from __future__ import annotations

import os
import re

from gradewire.core import InvalidInputError, LogValue
from gradewire_mlflow._errors import mlflow_errors
from gradewire_mlflow._run import default_tracking_uri

__all__ = ["read_mlflow_history"]

_REF = re.compile(r"^(?:mlflow:)?(?:runs:/)?([0-9a-f]{32})/?$")


def read_mlflow_history(ref: str) -> list[tuple[int, dict[str, LogValue]]] | None:
    """The ``(step, metrics)`` pairs of the MLflow run ``ref`` names, in step order.

    ``ref`` is ``mlflow:<run id>``, ``runs:/<run id>`` or the bare 32-hex run id; the
    tracking store is ``MLFLOW_TRACKING_URI`` (default ``./mlflow.db``). None when ``ref``
    is not a run id; a run id this store does not hold is an error, since no other
    reader would take it.

    Raises:
        InvalidInputError: The store holds no run of that id.
        SinkError: MLflow could not be reached.
    """
    match = _REF.match(ref.strip())
    if match is None:
        return None
    from mlflow import MlflowClient

    uri = os.environ.get("MLFLOW_TRACKING_URI") or default_tracking_uri()
    client = MlflowClient(uri)
    run_id = match.group(1)
    with mlflow_errors(uri, f"read the run {run_id}"):
        try:
            run = client.get_run(run_id)
        except Exception as exc:
            if getattr(exc, "error_code", None) == "RESOURCE_DOES_NOT_EXIST":
                raise InvalidInputError(
                    f"the MLflow store at {uri} holds no run {run_id}; set MLFLOW_TRACKING_URI "
                    "to the store that logged it"
                ) from None
            raise
        points: dict[int, dict[str, tuple[int, float]]] = {}
        for key in sorted(run.data.metrics):
            for point in client.get_metric_history(run_id, key):
                at = points.setdefault(int(point.step), {})
                kept = at.get(key)
                if kept is None or point.timestamp >= kept[0]:
                    at[key] = (int(point.timestamp), float(point.value))
    return [
        (step, {key: value for key, (_, value) in logs.items()})
        for step, logs in sorted(points.items())
    ]
