"""gradewire-wandb: a gradewire sink that logs grader output to Weights & Biases.

Example:
    >>> from gradewire_wandb import WandbSink
    >>> sink = WandbSink(project="rl", prefix="rewards")  # doctest: +SKIP
    >>> sink.log(grader.get_logs(clear=True), step=10)  # doctest: +SKIP
"""

from gradewire_wandb._sink import DEFAULT_TABLE_POLICY, HTML_SUFFIX, WandbSink

__version__ = "0.1.0"

__all__ = ["DEFAULT_TABLE_POLICY", "HTML_SUFFIX", "WandbSink", "__version__"]
