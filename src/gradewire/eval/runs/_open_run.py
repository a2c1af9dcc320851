"""open_run: the run a reference names, whoever wrote it (compare's two arguments).

A reference is told by what it is: a gradewire run folder; lm-eval's sample logs (a
``samples_<task>_<date>.jsonl`` file, or the folder of one run's); a file an installed
integration reads (an Inspect AI ``.eval`` or ``.json`` log, through ``gradewire[inspect]``);
or, for a reference that is no file or folder, a run an installed tracker knows (an MLflow
run id). Anything else is refused with what would have been read.
"""

from __future__ import annotations

import os
from pathlib import Path

from gradewire.core import InvalidInputError, MissingDependencyError
from gradewire.eval.runs._eval_run import EvalRun, load_run
from gradewire.eval.runs._evals_output_items import (
    is_evals_output_items,
    read_evals_output_items,
)
from gradewire.eval.runs._folder import CONFIG, is_run, read_config
from gradewire.eval.runs._lm_eval_log import is_lm_eval_log, read_lm_eval_run
from gradewire.eval.runs._sources import find_run_or_missing

__all__ = ["RUN_KINDS", "open_run"]

RUN_KINDS = (
    f"a gradewire run folder (written by gradewire eval --out, with its {CONFIG}), an "
    "Inspect AI log (.eval or .json, needs gradewire[inspect]), lm-eval's "
    "samples_<task>_<date>.jsonl files from --log_samples (a file, or the folder of one "
    "run's), a JSONL of an OpenAI Evals run's output items, or an MLflow run id (needs "
    "gradewire[mlflow] and MLFLOW_TRACKING_URI)"
)
"""What `open_run` reads, for messages."""

# What each extra's reader reads, for the message that names a missing one.
_KINDS = {"inspect": "an Inspect AI log", "mlflow": "an MLflow run id"}


def open_run(ref: str | os.PathLike[str]) -> EvalRun:
    """The eval run ``ref`` names, told by what it is.

    A gradewire run folder, an Inspect AI log, lm-eval's sample logs, or a tracker's run id.

    Args:
        ref: A path, or a run id an installed tracker knows (an MLflow run id).

    Raises:
        InvalidInputError: ``ref`` is none of these, or its files are malformed (the
            message names the file and says what to pass instead).
        MissingDependencyError: An Inspect AI log without the ``inspect`` extra.
    """
    path = Path(ref)
    text = os.fspath(ref)
    if path.is_dir() and is_run(read_config(path)):
        return load_run(path)
    if is_lm_eval_log(path):
        return read_lm_eval_run(path)
    if is_evals_output_items(path):
        return read_evals_output_items(path)
    run, missing = find_run_or_missing(text)
    if run is not None:
        return run
    if path.suffix.lower() in (".eval", ".json") and path.is_file():
        # No installed reader claimed it: the Inspect reader is not installed.
        raise MissingDependencyError(
            "inspect-ai", extra="inspect", purpose=f"read the Inspect AI log {path}"
        )
    # Named only now that nothing else read the reference.
    extras = "".join(
        f". This may be {_KINDS.get(exc.extra or '', f'a run {exc.extra or exc.package} reads')}"
        f", whose reader is not installed: "
        f"pip install '{f'gradewire[{exc.extra}]' if exc.extra else exc.package}'"
        for exc in missing
    )
    if path.exists():
        what = "folder" if path.is_dir() else "file"
        raise InvalidInputError(
            f"{path} is a {what} gradewire cannot read as a run; pass {RUN_KINDS}{extras}"
        )
    raise InvalidInputError(
        f"{text!r} is no file or folder, and no run an installed tracker knows; pass "
        f"{RUN_KINDS}{extras}"
    )
