"""The records of a ``.wandb`` run file, as wandb's own reader gives them.

wandb 0.31 has no Python reader for its run files: ``wandb sync`` and ``wandb leet
inspect`` hand the file to the ``wandb-core`` program shipped in the wheel. This module
asks that program (``wandb-core leet inspect --json``, one JSON object per record) and
keeps what it says on stderr about a cut or damaged file, so that nothing here parses
the binary format.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gradewire import InvalidInputError
from gradewire_wandb._run_source import import_wandb

__all__ = [
    "IncompleteRunError",
    "OfflineRunError",
    "RunRecords",
    "find_offline_runs",
    "read_records",
    "run_file",
]

_HOW = (
    "pass an offline-run-<time>-<id> folder from W&B's wandb/ directory, or the "
    "run-<id>.wandb file inside it"
)
# What wandb-core says of a file whose last record is cut: a run being written, or killed.
_TORN_TAIL = "incomplete .wandb file"


class OfflineRunError(InvalidInputError):
    """The path is not a W&B run that can be read; the message says what to pass instead."""


class IncompleteRunError(OfflineRunError):
    """The run has not finished, its file ends in a cut record, or holds damaged records.

    The message says which; ``read_offline_run(path, partial=True)`` reads what it holds.
    """


@dataclass(frozen=True)
class RunRecords:
    """The records of one run file and what wandb's reader reported while reading it.

    Attributes:
        records: One dict per record (``{"type": "history", "history": {...}}``), in order.
        problems: wandb's own words on a cut or damaged file (empty for a sound one).
    """

    records: tuple[dict[str, Any], ...]
    problems: tuple[str, ...]

    @property
    def torn_only(self) -> bool:
        """Whether the only problem is a cut last record (a run still being written)."""
        return all(_TORN_TAIL in problem for problem in self.problems)


def find_offline_runs(directory: str | Path) -> list[Path]:
    """The offline run folders in ``directory`` (W&B's ``dir``, or its ``wandb/`` folder).

    Sorted by name, so by start time to the second, then by W&B's random run id.

    Example:
        >>> find_offline_runs("my-project")  # doctest: +SKIP
        [PosixPath('my-project/wandb/offline-run-20260101_120000-ab12cd34')]
    """
    root = Path(directory)
    return sorted({*root.glob("offline-run-*"), *root.glob("wandb/offline-run-*")})


def run_file(path: str | Path) -> Path:
    """The ``run-<id>.wandb`` file that ``path`` (a run folder or the file itself) names.

    Raises:
        OfflineRunError: ``path`` does not exist, is another kind of file, or is a folder
            that holds no run file (or several).
    """
    given = Path(path)
    if given.is_file():
        if given.suffix != ".wandb":
            raise OfflineRunError(f"{given} is not a W&B run file (*.wandb); {_HOW}")
        return given
    if not given.is_dir():
        raise OfflineRunError(f"{given} does not exist; {_HOW}")
    files = sorted(given.glob("run-*.wandb"))
    if len(files) == 1:
        return files[0]
    if files:
        names = ", ".join(file.name for file in files)
        raise OfflineRunError(f"{given} holds several run files ({names}); pass one of them")
    runs = find_offline_runs(given)
    if runs:
        listed = ", ".join(str(run) for run in runs[:5]) + (", ..." if len(runs) > 5 else "")
        raise OfflineRunError(
            f"{given} is a folder of {len(runs)} W&B run(s), not one run: pass one of "
            f"them ({listed}); find_offline_runs({str(given)!r}) lists them"
        )
    raise OfflineRunError(f"{given} is not a W&B run folder (it holds no run-*.wandb file); {_HOW}")


def read_records(file: Path) -> RunRecords:
    """Every record wandb's reader finds in ``file``, and what it said of the file.

    Raises:
        OfflineRunError: wandb cannot read the file at all (for example a bad header).
    """
    wandb = import_wandb()
    core = wandb.util.get_core_path()
    done = subprocess.run(
        [core, "leet", "inspect", "--no-observability", "--json", "--run-file", str(file)],
        capture_output=True,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    said = done.stderr.decode("utf-8", errors="replace").strip()
    if done.returncode != 0:
        raise OfflineRunError(
            f"wandb cannot read {file} as a run file ({said or f'exit code {done.returncode}'}); "
            f"{_HOW}"
        )
    records = tuple(
        json.loads(line) for line in done.stdout.decode("utf-8").splitlines() if line.strip()
    )
    problems = tuple(line.strip() for line in said.splitlines() if line.strip())
    return RunRecords(records, problems)
