"""Real TRL training on a tiny CPU model, with W&B offline and MLflow on a sqlite store.

- ``tracker_env`` (session, autouse): every W&B directory under a session temp dir, W&B
  offline and quiet, MLflow failing fast and printing nothing; W&B's service is stopped at
  the end.
- ``template_db`` (session): an MLflow sqlite store migrated once; tests copy it.
- ``tiny_model``: the tiny model and byte tokenizer of ``trl_support.py`` (no download).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# The W&B run reader and the MLflow store helpers live with their adapters' tests.
_HERE = Path(__file__).resolve().parent
for folder in (_HERE.parents[1] / "wandb" / "tests", _HERE.parents[1] / "mlflow" / "tests"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from mlflow_support import migrate_template  # noqa: E402
from support.wandb_offline import go_offline, stop_wandb  # noqa: E402

_QUIET = {
    "WANDB_PROJECT": "gradewire-trl",
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1",
    "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true",
    "HF_HUB_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


@pytest.fixture(scope="session", autouse=True)
def tracker_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("trl-env")
    with pytest.MonkeyPatch.context() as patch:
        go_offline(patch, home)
        for name, value in _QUIET.items():
            patch.setenv(name, value)
        for name in ("MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_NAME", "MLFLOW_EXPERIMENT_ID"):
            patch.delenv(name, raising=False)
        yield home
        stop_wandb()


@pytest.fixture(scope="session")
def template_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mlflow-template") / "mlflow.db"
    migrate_template(path)
    return path
