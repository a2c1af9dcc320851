"""Merging log states across `torch.distributed` ranks, without importing torch.

torch is never imported here: a process that uses torch.distributed has imported it
already, so the module is looked up in `sys.modules`. Without it (or with no process group
initialised) there is one rank, and nothing to exchange.
"""

from __future__ import annotations

import sys
from typing import Any

from gradewire.core import GradewireError, LogState
from gradewire.sinks import process_rank
from gradewire.train._window import StepWindow

__all__ = ["distributed_rank", "gather_objects", "merge_log_states", "merge_windows"]


def _process_group() -> Any | None:
    """``torch.distributed`` when a process group is initialised in this process, else None."""
    dist = sys.modules.get("torch.distributed")
    if dist is None:
        return None
    try:
        if dist.is_available() and dist.is_initialized():
            return dist
    except Exception:  # a broken or stubbed install: behave as a single process
        return None
    return None


def distributed_rank() -> int:
    """This process's rank: from torch.distributed when initialised, else the launcher's."""
    dist = _process_group()
    return int(dist.get_rank()) if dist is not None else process_rank()


def gather_objects(obj: Any) -> list[Any]:
    """Every rank's ``obj`` (picklable), in rank order; ``[obj]`` outside a process group.

    A collective call: every rank of the group must make it, in the same order.
    """
    dist = _process_group()
    if dist is None:
        return [obj]
    gathered: list[Any] = [None] * int(dist.get_world_size())
    try:
        dist.all_gather_object(gathered, obj)
    except Exception as exc:
        raise GradewireError(
            f"could not gather grader logs across ranks ({type(exc).__name__}: {exc}); every "
            "rank must call step() (or reach the trainer's logging step) the same number of "
            "times"
        ) from exc
    return gathered


def merge_log_states(state: LogState) -> LogState:
    """``state`` merged with every other rank's (exact: counts, means, M2, min, max).

    Ranks whose key sets differ are fine: a key only some ranks logged merges over those.
    """
    return LogState.merge_all(LogState.from_dict(d) for d in gather_objects(state.to_dict()))


def merge_windows(window: StepWindow) -> StepWindow:
    """``window`` merged with every other rank's: statistics, histograms, groups, lengths."""
    return StepWindow.merge_all(StepWindow.from_dict(d) for d in gather_objects(window.to_dict()))
