"""A real MLflow tracking server on 127.0.0.1 for the session, and local sqlite stores.

- ``mlflow_env`` (session, autouse): MLflow's HTTP client fails fast (one immediate retry,
  so an outage reaches `BackgroundSink`), no proxy for loopback, no experiment from the
  environment, no "View run" lines on stdout.
- ``template_db`` (session): a sqlite tracking database migrated once (3-6 s); tests copy it
  (~0.05 s) instead of migrating their own.
- ``mlflow_server`` (session): a lean ``mlflow server`` on its own copy of the template,
  started in its own process session and stopped by killing its process group. It can be
  stopped and started again on the same port and store (`MlflowServer.kill`,
  `MlflowServer.start`), which the outage test does.

The server, the stores and the readers of what a run holds are in ``mlflow_support.py``.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from mlflow_support import MlflowServer, migrate_template
from spill_helpers import Trainer


@pytest.fixture(scope="session", autouse=True)
def mlflow_env() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        # One retry, which urllib3 makes at once: a keep-alive connection the server dropped
        # (it does after a 500) is replaced, while an outage still fails in milliseconds.
        patch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "1")
        patch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "10")
        patch.setenv("NO_PROXY", "127.0.0.1,localhost")
        patch.setenv("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
        for name in ("MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_NAME", "MLFLOW_EXPERIMENT_ID"):
            patch.delenv(name, raising=False)
        yield


@pytest.fixture(scope="session")
def template_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mlflow-template") / "template.db"
    migrate_template(path)
    return path


@pytest.fixture(scope="session")
def mlflow_server(
    tmp_path_factory: pytest.TempPathFactory, template_db: Path
) -> Iterator[MlflowServer]:
    directory = tmp_path_factory.mktemp("mlflow-server")
    db = directory / "mlflow.db"
    shutil.copyfile(template_db, db)
    server = MlflowServer(directory, db)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(autouse=True)
def no_trainer_left() -> Iterator[None]:
    """Kill the training processes a test started and did not end (it failed midway)."""
    yield
    for trainer in list(Trainer.alive):
        trainer.kill()
