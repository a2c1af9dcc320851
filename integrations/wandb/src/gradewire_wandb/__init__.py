"""gradewire-wandb: a gradewire sink that logs grader output to Weights & Biases.

Example:
    >>> from gradewire_wandb import WandbSink, read_offline_run
    >>> sink = WandbSink(project="rl", prefix="rewards")  # doctest: +SKIP
    >>> sink.log(grader.get_logs(clear=True), step=10)  # doctest: +SKIP
    >>> read_offline_run("wandb/offline-run-20260101_120000-ab12cd34").history  # doctest: +SKIP
"""

from gradewire_wandb._offline_run import OfflineRun, read_offline_run
from gradewire_wandb._run_records import IncompleteRunError, OfflineRunError, find_offline_runs
from gradewire_wandb._sink import DEFAULT_TABLE_POLICY, HTML_SUFFIX, WandbSink

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_TABLE_POLICY",
    "HTML_SUFFIX",
    "IncompleteRunError",
    "OfflineRun",
    "OfflineRunError",
    "WandbSink",
    "__version__",
    "find_offline_runs",
    "read_offline_run",
]
