"""gradewire-mlflow: a gradewire sink that logs grader output to MLflow.

Example:
    >>> from gradewire import BackgroundSink
    >>> from gradewire_mlflow import MlflowSink
    >>> sink = BackgroundSink(MlflowSink(experiment_name="rl"))  # doctest: +SKIP
    >>> sink.log(grader.get_logs(clear=True), step=10)  # doctest: +SKIP
"""

from gradewire.core._lazy import attach

TYPE_CHECKING = False  # typing's, without importing typing: type checkers take it as true

# The public names, one line each: from <module> import <Name> as <Name> (gradewire.core._lazy).
if TYPE_CHECKING:
    from gradewire_mlflow._run import default_tracking_uri as default_tracking_uri
    from gradewire_mlflow._sink import DEFAULT_TABLE_POLICY as DEFAULT_TABLE_POLICY
    from gradewire_mlflow._sink import MlflowSink as MlflowSink
    from gradewire_mlflow._tables import STEP_COLUMN as STEP_COLUMN

__version__ = "0.1.0"

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(__name__)
