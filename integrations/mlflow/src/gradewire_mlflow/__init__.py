"""gradewire-mlflow: a gradewire sink that logs grader output to MLflow.

Example:
    >>> from gradewire import BackgroundSink
    >>> from gradewire_mlflow import MlflowSink
    >>> sink = BackgroundSink(MlflowSink(experiment_name="rl"))  # doctest: +SKIP
    >>> sink.log(grader.get_logs(clear=True), step=10)  # doctest: +SKIP
"""

from gradewire_mlflow._run import default_tracking_uri
from gradewire_mlflow._sink import DEFAULT_TABLE_POLICY, MlflowSink
from gradewire_mlflow._tables import STEP_COLUMN

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_TABLE_POLICY",
    "STEP_COLUMN",
    "MlflowSink",
    "__version__",
    "default_tracking_uri",
]
