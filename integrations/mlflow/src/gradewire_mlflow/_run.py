"""Which MLflow run a sink logs to, at which tracking URI; found or started on first use."""

from __future__ import annotations

import logging
import os
import shlex
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from gradewire import InvalidInputError, InvalidTypeError
from gradewire_mlflow._writer import Writer

if TYPE_CHECKING:
    from mlflow import MlflowClient

__all__ = ["RunTarget", "default_tracking_uri", "same_store"]

logger = logging.getLogger("gradewire")


def default_tracking_uri() -> str:
    """MLflow's own default store, made absolute: ``sqlite:///<current dir>/mlflow.db``."""
    return "sqlite:///" + (Path.cwd() / "mlflow.db").as_posix()


def same_store(tracking_uri: str) -> str:
    """``tracking_uri`` spelled one way, so that two spellings of one server name one run.

    A server's scheme and host in lower case, and no trailing ``/``.
    """
    parts = urlsplit(tracking_uri)
    if parts.scheme in ("http", "https"):
        host = parts.netloc.lower()
        return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), parts.query, ""))
    return tracking_uri


def ui_command(tracking_uri: str) -> str:
    """The shell command that opens ``tracking_uri`` in MLflow's UI, runnable anywhere.

    This interpreter's ``mlflow`` by its full path, so it works with no venv active.
    """
    beside = shutil.which("mlflow", path=str(Path(sys.executable).parent))
    program = (
        [str(Path(beside).absolute())]
        if beside
        else [str(Path(sys.executable).absolute()), "-m", "mlflow"]
    )
    return shlex.join([*program, "ui", "--backend-store-uri", tracking_uri])


def sqlite_artifact_location(tracking_uri: str) -> str | None:
    """Where a new experiment on a sqlite store keeps its artifacts: beside the database.

    MLflow's own choice is ``./mlruns`` of whatever folder the process runs in, so the
    artifacts of one store end up scattered over the folders it was used from. None for
    every other kind of store (a server chooses for itself).
    """
    if not tracking_uri.startswith("sqlite:///"):
        return None
    return (Path(tracking_uri[len("sqlite:///") :]).parent / "mlartifacts").as_uri()


def _run_tags(tags: Mapping[str, str]) -> dict[str, str]:
    """The tags ``mlflow.start_run`` would set (user, source, git commit), then ``tags``."""
    try:
        from mlflow.tracking.context.registry import resolve_tags

        resolved: dict[str, str] = resolve_tags(dict(tags))
    except Exception:  # an internal MLflow helper: never let it stop the logging
        logger.debug("mlflow's run context tags are unavailable", exc_info=True)
        return dict(tags)
    return resolved


def _check_text(name: str, value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidTypeError(f"{name} must be a str or None, not {type(value).__name__}")
    if not value:
        raise InvalidInputError(f"{name} must not be empty; pass None for the default")
    return value


class RunTarget:
    """The run to log to: settled as far as possible at construction, reached on `connect`.

    MLflow's active run and ``mlflow.set_experiment`` belong to the thread and tracking
    URI of the fluent API, so they are read (never changed) when the sink is created, on
    the user's thread; the run itself is found or started on the first write, which may
    happen on a BackgroundSink's worker thread.
    """

    def __init__(
        self,
        *,
        tracking_uri: str | None,
        experiment_name: str | None,
        run_name: str | None,
        run_id: str | None,
        tags: Mapping[str, str] | None,
        artifact_location: str | None,
        active: bool,
    ) -> None:
        texts = {
            "tracking_uri": tracking_uri,
            "experiment_name": experiment_name,
            "run_name": run_name,
            "run_id": run_id,
            "artifact_location": artifact_location,
        }
        for name, value in texts.items():
            _check_text(name, value)
        if run_id is not None and (experiment_name is not None or run_name is not None):
            raise InvalidInputError(
                "run_id names an existing run, so experiment_name and run_name cannot apply; "
                "pass run_id alone, or experiment_name/run_name to start a new run"
            )
        if tags is not None and not (
            isinstance(tags, Mapping) and all(isinstance(k, str) for k in tags)
        ):
            raise InvalidTypeError(f"tags must be a mapping of str keys, not {tags!r}")
        tags = {k: str(v) for k, v in (tags or {}).items()}
        self.run_id = run_id
        self.run_name = run_name
        self.tags = dict(tags)
        self.artifact_location = artifact_location
        self.experiment_name = experiment_name or os.environ.get("MLFLOW_EXPERIMENT_NAME") or None
        self.experiment_id: str | None = os.environ.get("MLFLOW_EXPERIMENT_ID") or None
        self.owns_run = False
        self.params: dict[str, str] = {}
        if active:
            self.tracking_uri = self._resolve(tracking_uri)
        else:  # a non-zero rank: touch nothing of MLflow
            uri = tracking_uri or os.environ.get("MLFLOW_TRACKING_URI")
            self.tracking_uri = uri or default_tracking_uri()

    def _resolve(self, tracking_uri: str | None) -> str:
        import mlflow

        fluent_uri = mlflow.get_tracking_uri()
        same_uri = tracking_uri in (None, fluent_uri)
        if self.run_id is None and same_uri:
            run = mlflow.active_run()
            if run is not None:
                self.run_id = run.info.run_id
                return fluent_uri
        if self.experiment_name is None and self.experiment_id is None and same_uri:
            from mlflow.tracking import fluent

            # Set by mlflow.set_experiment(); private, so read defensively.
            active_experiment = getattr(fluent, "_active_experiment_id", None)
            if isinstance(active_experiment, str):
                self.experiment_id = active_experiment
        if tracking_uri is not None:
            return tracking_uri
        uri_set: bool = mlflow.is_tracking_uri_set()  # type: ignore[no-untyped-call]
        return fluent_uri if uri_set else default_tracking_uri()

    def spill_target(self, end_status: str) -> dict[str, Any]:
        """Where the sink delivers, as `gradewire.BackgroundSink` keeps it with its spill files.

        ``run`` names the run once it is known: the next BackgroundSink of the same run
        adopts the files, and ``gradewire sync`` delivers them there. Before the run
        exists, ``new_run`` says how to start it. ``ends_run``: the status the sink's
        ``close()`` ends the run with, when the sink starts the run itself.
        """
        run = None
        if self.run_id is not None:
            run = {"tracking_uri": same_store(self.tracking_uri), "run_id": self.run_id}
        target: dict[str, Any] = {"kind": "mlflow", "run": run, "tracking_uri": self.tracking_uri}
        if self.run_id is None:
            target["new_run"] = {
                "experiment_name": self.experiment_name,
                "experiment_id": self.experiment_id,
                "run_name": self.run_name,
                "tags": self.tags,
                "artifact_location": self.artifact_location,
            }
        if self.owns_run or self.run_id is None:
            target["ends_run"] = end_status
        return target

    def connect(self) -> Writer:
        """Find or start the run; an existing run's params are read into `params`."""
        from mlflow import MlflowClient

        client = MlflowClient(tracking_uri=self.tracking_uri)
        if self.run_id is None:
            experiment_id = self._experiment(client)
            tags = _run_tags(self.tags)
            run = client.create_run(experiment_id, run_name=self.run_name, tags=tags)
            self.owns_run = True
        else:
            run = client.get_run(self.run_id)
            self.params = dict(run.data.params)
        self.run_id = run.info.run_id
        self.experiment_id = run.info.experiment_id
        writer = Writer(client, run.info.run_id)
        if self.tags and not self.owns_run:
            writer.send_tags(self.tags)
        return writer

    def _experiment(self, client: MlflowClient) -> str:
        name = self.experiment_name
        if name is None:
            return self.experiment_id or "0"  # MLflow's Default experiment
        experiment = client.get_experiment_by_name(name)
        if experiment is None:
            try:
                location = self.artifact_location or sqlite_artifact_location(self.tracking_uri)
                return client.create_experiment(name, artifact_location=location)
            except Exception:
                # Another process (another rank, another job) may have created it meanwhile.
                experiment = client.get_experiment_by_name(name)
                if experiment is None:
                    raise
        if experiment.lifecycle_stage != "active":
            raise InvalidInputError(
                f"MLflow experiment {name!r} is deleted, so no run can start in it; restore "
                f"it (mlflow experiments restore --experiment-id {experiment.experiment_id}) "
                "or pass another experiment_name"
            )
        return str(experiment.experiment_id)
