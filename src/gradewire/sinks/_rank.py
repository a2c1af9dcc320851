"""Which process of a distributed job this is, read from the launcher's environment."""

from __future__ import annotations

import os
from collections.abc import Mapping

from gradewire.core._errors import InvalidInputError

__all__ = ["RANK_VARIABLES", "is_main_process", "process_rank"]

RANK_VARIABLES = (
    "RANK",  # torchrun, accelerate, DeepSpeed
    "SLURM_PROCID",
    "OMPI_COMM_WORLD_RANK",
    "PMI_RANK",  # MPICH, Intel MPI
    "JAX_PROCESS_INDEX",
    "LOCAL_RANK",  # last: it repeats on every node, so it is only a fallback
)
"""The environment variables `process_rank` reads, in order."""


def process_rank(environ: Mapping[str, str] | None = None) -> int:
    """The global rank of this process: 0 on the main process or outside a distributed job.

    The first of `RANK_VARIABLES` that is set wins. A variable set to an empty string
    counts as unset, since some launchers export empty placeholders.

    Args:
        environ: Where to read the variables; defaults to `os.environ`.

    Raises:
        InvalidInputError: The winning variable is not a non-negative integer.
    """
    env = os.environ if environ is None else environ
    for name in RANK_VARIABLES:
        raw = env.get(name)
        if raw is None or not raw.strip():
            continue
        text = raw.strip()
        if not text.isascii() or not text.isdigit():
            raise InvalidInputError(
                f"environment variable {name}={raw!r} is not a process rank; it must be a "
                f"non-negative integer such as 0: fix or unset {name}"
            )
        return int(text)
    return 0


def is_main_process(environ: Mapping[str, str] | None = None) -> bool:
    """Whether this is the process that logs: rank 0 (see `process_rank`)."""
    return process_rank(environ) == 0
