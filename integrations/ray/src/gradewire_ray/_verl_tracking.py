"""The trainer-side hook: veRL's `Tracking` logs the channel's figures at every step."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from gradewire import Histogram, MissingDependencyError
from gradewire_ray._channel import DEFAULT_CHANNEL, channel_handle, drain_reward_stats

__all__ = ["install_verl_hook", "split_for_tracking"]

logger = logging.getLogger("gradewire")
_MARK = "__gradewire_channel__"


def split_for_tracking(logs: Mapping[str, Any]) -> tuple[dict[str, float], dict[str, Histogram]]:
    """The numbers every backend takes, and the histograms (W&B only draws those)."""
    numbers = {k: float(v) for k, v in logs.items() if isinstance(v, int | float)}
    histograms = {k: v for k, v in logs.items() if isinstance(v, Histogram)}
    return numbers, histograms


def install_verl_hook(channel: str = DEFAULT_CHANNEL) -> None:
    """Make veRL's ``Tracking`` log the reward workers' figures with every step's metrics.

    After this call, each ``Tracking.log(data, step)`` in the process first drains the
    channel (`drain_reward_stats`) and logs ``rewards/<grader>/...`` (and
    ``val-rewards/...``) with the step's own metrics, through every backend veRL was
    configured with; histograms go to the W&B backend as ``wandb.Histogram``. A
    ``Tracking`` created afterwards opens the channel, so it belongs to the trainer.
    Calling it again does nothing. The usual way in is the environment variable
    ``VERL_USE_EXTERNAL_MODULES=gradewire_ray.verl_plugin``, which makes veRL import the
    plugin (and so call this) in the trainer's process.

    Raises:
        MissingDependencyError: veRL is not installed.
    """
    try:
        from verl.utils import tracking
    except ImportError as exc:
        raise MissingDependencyError("verl", purpose="log reward statistics in veRL") from exc
    cls = tracking.Tracking
    if getattr(cls, _MARK, None) is not None:
        return
    original_init: Callable[..., None] = cls.__init__
    original_log: Callable[..., None] = cls.log

    @functools.wraps(original_init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        try:
            channel_handle(channel)  # the trainer owns it: it outlives the reward workers
        except Exception as exc:  # not under Ray: nothing to drain, training goes on
            logger.warning("no reward statistics channel (%s: %s)", type(exc).__name__, exc)

    @functools.wraps(original_log)
    def log(self: Any, data: Mapping[str, Any], step: int, backend: Any = None) -> None:
        try:
            numbers, histograms = split_for_tracking(drain_reward_stats(channel))
        except Exception as exc:
            logger.warning(
                "could not read reward statistics from %r (%s: %s)",
                channel,
                type(exc).__name__,
                exc,
            )
            numbers, histograms = {}, {}
        original_log(self, {**data, **numbers}, step, backend)
        if (
            histograms
            and "wandb" in getattr(self, "logger", {})
            and (backend is None or "wandb" in backend)
        ):
            import wandb

            drawn = {
                key: wandb.Histogram(np_histogram=(np.asarray(h.counts), np.asarray(h.edges)))
                for key, h in histograms.items()
            }
            original_log(self, drawn, step, ["wandb"])

    setattr(cls, "__init__", __init__)  # noqa: B010 - a method replaced on veRL's class
    setattr(cls, "log", log)  # noqa: B010
    setattr(cls, _MARK, channel)
