"""The reward-statistics channel: a named Ray actor that merges the windows workers send.

Reward workers (veRL's reward-loop actors, or any Ray actor) send mergeable windows
(per-grader log states, histograms, group spreads: `StepWindow`) under a section name
(``rewards``, ``val-rewards``); the trainer drains the channel once a step and logs
the merged figures. Merging is exact, so the trainer logs one true figure for all the
workers' samples of the step.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from gradewire import InvalidInputError
from gradewire.core import LogValue
from gradewire.train._window import StepWindow
from gradewire_ray._ray import import_ray

__all__ = ["DEFAULT_CHANNEL", "channel_handle", "drain_reward_stats", "merge_sections"]

DEFAULT_CHANNEL = "gradewire-reward-stats"
"""The name of the channel actor that `verl_compute_score` and the trainer hook share."""


class ChannelActor:
    """The actor's state: the windows sent since the last drain, merged per section."""

    def __init__(self) -> None:
        self._pending: dict[str, StepWindow] = {}
        self.received = 0

    def send(self, windows: Mapping[str, Mapping[str, Any]]) -> int:
        """Merge windows (``{section: StepWindow.to_dict()}``); returns how many came so far."""
        merge_sections(self._pending, windows)
        self.received += 1
        return self.received

    def drain(self) -> dict[str, dict[str, Any]]:
        """Everything sent since the last drain, and start over."""
        out = {section: window.to_dict() for section, window in self._pending.items()}
        self._pending = {}
        return out


def merge_sections(into: dict[str, StepWindow], windows: Mapping[str, Mapping[str, Any]]) -> None:
    """Merge ``{section: window dict}`` into ``into`` (in place)."""
    for section, data in windows.items():
        window = StepWindow.from_dict(data)
        mine = into.get(section)
        into[section] = window if mine is None else mine.merge(window)


def channel_handle(name: str = DEFAULT_CHANNEL) -> Any:
    """The channel actor named ``name`` in this Ray job, created by the first caller.

    It takes no CPU (a trainer's cluster has none to spare) and lives as long as the
    process that created it; the trainer hook creates it first.
    """
    if not isinstance(name, str) or not name:
        raise InvalidInputError(f"the channel name must be a non-empty str, not {name!r}")
    return _actor_class().options(name=name, get_if_exists=True).remote()


@functools.cache
def _actor_class() -> Any:
    ray = import_ray("send reward statistics across Ray actors")
    return ray.remote(num_cpus=0, max_restarts=0)(ChannelActor)


def drain_reward_stats(channel: str = DEFAULT_CHANNEL) -> dict[str, LogValue]:
    """Every reward worker's figures since the last drain, merged: call it once a step.

    Returns ``<section>/<grader>/score/mean``, ``/std``, ``/min``, ``/max``, ``/count``,
    the abstention and error counts, ``.../score/histogram`` (a `Histogram`) and the
    group and length figures, as `RewardLogger.step` logs them; {} when nothing came.
    A call from the driver or any actor of the Ray job sees the same channel.
    """
    ray = import_ray("read reward statistics across Ray actors")
    sections: dict[str, StepWindow] = {}
    merge_sections(sections, ray.get(channel_handle(channel).drain.remote()))
    logs: dict[str, LogValue] = {}
    for section, window in sections.items():
        logs.update(window.to_logs(section))
    return logs
