"""The MlflowSink that ``gradewire sync`` delivers a spill directory's MLflow entries with.

Offered as the ``spill_target.mlflow`` entry point (`gradewire.core._integrations`): given the
delivery target a `MlflowSink` left with its spill files (`MlflowSink.delivery_target`),
it makes a sink that logs to the same run, or to the run the user names instead.

MLflow's client sends this environment's credentials (``MLFLOW_TRACKING_TOKEN``, a
username and password, a credentials file) to whatever server it is pointed at, and a
spill folder is data anyone who could write to it may have planted. So `destination`
says whether the user named the server a target would go to: ``--tracking-uri``, or the
environment's ``MLFLOW_TRACKING_URI``; a server only the files name is not contacted
unless ``gradewire sync --trust-target`` confirms it. A local store (a path, ``file:``,
``sqlite:``) sends nothing anywhere.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from gradewire import InvalidInputError
from gradewire_mlflow._run import same_store
from gradewire_mlflow._sink import MlflowSink

__all__ = ["SpillTarget", "sink_for_target"]

# Stores on this machine: no request, so no credential, leaves it. One letter: a Windows drive.
_LOCAL_SCHEMES = frozenset({"", "file", "sqlite"})
# Artifacts kept by the tracking server itself: they go where the tracking URI goes.
_SERVER_ARTIFACTS = frozenset({"mlflow-artifacts"})


def _text(target: Mapping[str, Any], *path: str) -> str | None:
    value: Any = target
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value if isinstance(value, str) and value else None


def _local(uri: str) -> bool:
    scheme = urlsplit(uri).scheme.lower()
    return scheme in _LOCAL_SCHEMES or len(scheme) == 1


def destination(
    target: Mapping[str, Any], *, tracking_uri: str | None = None, run_id: str | None = None
) -> tuple[str, str | None]:
    """Where the run of ``target`` would be delivered, and why the user has not named it.

    Returns:
        ``("MLflow at <uri>", None)`` when the user named that server (``tracking_uri``,
        given by hand, or the environment's ``MLFLOW_TRACKING_URI``) or it is a local
        store; else, as second item, a sentence that says how to name it.

    Raises:
        InvalidInputError: The target names no tracking URI and none is given.
    """
    del run_id  # the run does not decide where credentials go
    uri = tracking_uri or _text(target, "tracking_uri")
    if uri is None:
        raise InvalidInputError("the spill files name no MLflow tracking URI; pass --tracking-uri")
    where = f"MLflow at {uri}"
    new_run = target.get("new_run")
    artifacts = _text(new_run, "artifact_location") if isinstance(new_run, Mapping) else None
    remote_artifacts = (
        artifacts is not None
        and not _local(artifacts)
        and urlsplit(artifacts).scheme.lower() not in _SERVER_ARTIFACTS
    )
    if remote_artifacts:
        where += f", artifacts at {artifacts}"
    named = tracking_uri is not None or _local(uri)
    environment = os.environ.get("MLFLOW_TRACKING_URI")
    if not named and environment:
        named = same_store(environment) == same_store(uri)
    if named and not remote_artifacts:
        return where, None
    if not named:
        return where, (
            f"the spill files name the MLflow server {uri}, which neither --tracking-uri nor "
            "MLFLOW_TRACKING_URI names, and it would receive this environment's MLflow "
            f"credentials: if it is yours, deliver there with --tracking-uri {uri} (or "
            f"MLFLOW_TRACKING_URI={uri} for a folder of several runs, or --trust-target)"
        )
    return where, (
        f"the spill files name the artifact location {artifacts} for the run's new "
        "experiment, which would receive its artifacts with this environment's "
        "credentials: deliver with --trust-target if it is yours"
    )


class SpillTarget:
    """The ``spill_target.mlflow`` entry point of ``gradewire.integrations``."""

    def __call__(
        self,
        target: Mapping[str, Any],
        *,
        closed: bool,
        tracking_uri: str | None = None,
        run_id: str | None = None,
    ) -> MlflowSink:
        """See `make_sink`."""
        return make_sink(target, closed=closed, tracking_uri=tracking_uri, run_id=run_id)

    def destination(
        self,
        target: Mapping[str, Any],
        *,
        tracking_uri: str | None = None,
        run_id: str | None = None,
    ) -> tuple[str, str | None]:
        """See `destination`."""
        return destination(target, tracking_uri=tracking_uri, run_id=run_id)


def make_sink(
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


sink_for_target = SpillTarget()
"""The factory ``gradewire sync`` loads (entry point ``mlflow``)."""
