"""gradewire-wandb: a gradewire sink that logs grader output to Weights & Biases.

Example:
    >>> from gradewire_wandb import WandbSink, read_offline_run
    >>> sink = WandbSink(project="rl", prefix="rewards")  # doctest: +SKIP
    >>> sink.log(grader.get_logs(clear=True), step=10)  # doctest: +SKIP
    >>> read_offline_run("wandb/offline-run-20260101_120000-ab12cd34").history  # doctest: +SKIP
"""

from gradewire.core._lazy import attach

TYPE_CHECKING = False  # typing's, without importing typing: type checkers take it as true

# The public names, one line each: from <module> import <Name> as <Name> (gradewire.core._lazy).
if TYPE_CHECKING:
    from gradewire_wandb._offline_run import OfflineRun as OfflineRun
    from gradewire_wandb._offline_run import read_offline_run as read_offline_run
    from gradewire_wandb._run_records import IncompleteRunError as IncompleteRunError
    from gradewire_wandb._run_records import OfflineRunError as OfflineRunError
    from gradewire_wandb._run_records import find_offline_runs as find_offline_runs
    from gradewire_wandb._sink import DEFAULT_TABLE_POLICY as DEFAULT_TABLE_POLICY
    from gradewire_wandb._sink import HTML_SUFFIX as HTML_SUFFIX
    from gradewire_wandb._sink import WandbSink as WandbSink

__version__ = "0.1.0"

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(__name__)
