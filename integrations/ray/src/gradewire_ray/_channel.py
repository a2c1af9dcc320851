"""The reward-statistics channel: a named Ray actor that merges the windows workers send.

Reward workers (veRL's reward-loop actors, or any Ray actor) send mergeable windows
(per-grader log states, histograms, group spreads: `StepWindow`) under a section name
(``rewards``, ``val-rewards``); the trainer drains the channel once a step and logs
the merged figures. Merging is exact, so the trainer logs one true figure for all the
workers' samples of the step.

The actor runs on the head node, so losing any other node (and the reward workers on
it) loses none of the figures it holds. It lives as long as the process that created
it; if that process dies (a reward worker that sent before the trainer's first drain,
on a node that went down), a new channel takes its place, and the first drain that
notices refuses that step's figures (some of them went with the old channel) instead of
returning a partial step: at most one step is lost, and no sample is counted twice.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Mapping
from typing import Any

from gradewire import GradewireError, InvalidInputError
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
        self.incarnation = uuid.uuid4().hex
        """Tells a drainer that this channel took the place of one that was lost."""

    def send(self, windows: Mapping[str, Mapping[str, Any]]) -> int:
        """Merge windows (``{section: StepWindow.to_dict()}``); returns how many came so far."""
        merge_sections(self._pending, windows)
        self.received += 1
        return self.received

    def drain(self) -> dict[str, Any]:
        """Everything sent since the last drain (``windows``) and the ``incarnation``."""
        out = {section: window.to_dict() for section, window in self._pending.items()}
        self._pending = {}
        return {"incarnation": self.incarnation, "windows": out}


def merge_sections(into: dict[str, StepWindow], windows: Mapping[str, Mapping[str, Any]]) -> None:
    """Merge ``{section: window dict}`` into ``into`` (in place)."""
    for section, data in windows.items():
        window = StepWindow.from_dict(data)
        mine = into.get(section)
        into[section] = window if mine is None else mine.merge(window)


def channel_handle(name: str = DEFAULT_CHANNEL, *, fresh: bool = False) -> Any:
    """The channel actor named ``name`` in this Ray job, created by the first caller.

    It takes no CPU (a trainer's cluster has none to spare), runs on the head node, and
    lives as long as the process that created it; the trainer hook creates it first.
    ``fresh`` looks it up again (or creates it), for a caller whose handle failed.
    """
    if not isinstance(name, str) or not name:
        raise InvalidInputError(f"the channel name must be a non-empty str, not {name!r}")
    handle = None if fresh else _handles.get(name)
    if handle is None:
        handle = _actor_class().options(name=name, get_if_exists=True).remote()
        # Kept for the life of this process: Ray destroys an actor (named or not) once
        # the process that created it holds no handle to it any more.
        _handles[name] = handle
    return handle


@functools.cache
def _actor_class() -> Any:
    ray = import_ray("send reward statistics across Ray actors")
    # Placed where Ray Train keeps its own state actor: the head node runs the cluster's
    # control store, so the channel goes down only with the whole cluster (left to
    # Ray, a channel with no resources lands on any node, a worker node included).
    head = {"node:__internal_head__": 0.001}
    return ray.remote(num_cpus=0, max_restarts=0, resources=head)(ChannelActor)


# This process's handle of each channel it opened, and the incarnation it drained last.
_handles: dict[str, Any] = {}
_drained: dict[str, str] = {}


def drain_reward_stats(channel: str = DEFAULT_CHANNEL) -> dict[str, LogValue]:
    """Every reward worker's figures since the last drain, merged: call it once a step.

    Returns ``<section>/<grader>/score/mean``, ``/std``, ``/min``, ``/max``, ``/count``,
    the abstention and error counts, ``.../score/histogram`` (a `Histogram`) and the
    group and length figures, as `RewardLogger.step` logs them; {} when nothing came.
    A call from the driver or any actor of the Ray job sees the same channel. Call it
    once before the reward workers start (the veRL hook does) so that the channel
    belongs to the trainer's process.

    Raises:
        GradewireError: The channel was lost since this process's last drain (the
            process that created it died) and a new one took its place: some of this
            step's figures went with the old one, so none are returned. The next drain
            returns its step's figures again.
    """
    ray = import_ray("read reward statistics across Ray actors")
    try:
        drained = ray.get(channel_handle(channel).drain.remote())
    except ray.exceptions.RayActorError:  # gone: a new one takes its place (see below)
        drained = ray.get(channel_handle(channel, fresh=True).drain.remote())
    before = _drained.get(channel)
    _drained[channel] = drained["incarnation"]
    if before is not None and before != drained["incarnation"]:
        raise GradewireError(
            f"the reward statistics channel {channel!r} was lost since the last drain (the "
            "process that created it died) and was created again: this step's figures are "
            "incomplete and are left out. Call drain_reward_stats() once in the trainer "
            "before the reward workers start, so that the channel belongs to the trainer"
        )
    sections: dict[str, StepWindow] = {}
    merge_sections(sections, drained["windows"])
    logs: dict[str, LogValue] = {}
    for section, window in sections.items():
        logs.update(window.to_logs(section))
    return logs
