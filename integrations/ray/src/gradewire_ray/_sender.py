"""Sending a process's reward windows to the channel, so none is late for its step."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from gradewire.train import RewardLogger
from gradewire.train._window import StepWindow
from gradewire_ray._channel import channel_handle, merge_sections

__all__ = ["WindowSender"]

logger = logging.getLogger("gradewire")


class WindowSender:
    """Sends the windows of a process's reward loggers, batching concurrent samples.

    A sample's call waits for `delivered()`: a flush that starts after the sample was
    recorded, and ends once the channel holds it. So when a training step's rewards are
    all computed, the channel holds all of them, and the trainer's drain at that step is
    exact. Samples that finish while a flush is under way go out together in the next
    one (one actor call for many samples). A channel that cannot be reached never fails
    a reward: the windows are kept and sent with the next flush, and a warning says so.
    """

    def __init__(self, channel: str) -> None:
        self.channel = channel
        self.loggers: dict[str, RewardLogger] = {}
        self._waiters: list[asyncio.Future[None]] = []
        self._task: asyncio.Task[None] | None = None
        self._unsent: dict[str, StepWindow] = {}
        self._warned = False
        self.flushes = 0

    async def delivered(self) -> None:
        """Return once everything recorded so far is in the channel (or kept for later)."""
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        self._waiters.append(waiter)
        if self._task is None or self._task.done():
            self._task = loop.create_task(self._flush())
        await waiter

    async def _flush(self) -> None:
        while self._waiters:
            waiters, self._waiters = self._waiters, []
            # No await between collecting and clearing: the windows are a snapshot.
            windows = dict(self._unsent)
            self._unsent = {}
            for section, reward_logger in self.loggers.items():
                window = reward_logger.collect()
                if not window.empty:
                    merge_sections(windows, {section: window.to_dict()})
            try:
                if windows:
                    await self._send({k: w.to_dict() for k, w in windows.items()})
            except Exception as exc:
                self._unsent = windows
                if not self._warned:
                    self._warned = True
                    logger.warning(
                        "could not send reward statistics to the Ray actor %r (%s: %s); they "
                        "are kept and sent with the next samples",
                        self.channel,
                        type(exc).__name__,
                        exc,
                    )
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)

    async def _send(self, windows: dict[str, Any]) -> None:
        try:
            await channel_handle(self.channel).send.remote(windows)
        except Exception:
            # The channel this process knew is gone (a new one may have taken its place):
            # once more with a fresh handle, so that these windows are not left for a
            # flush that may come only after the step's drain.
            await channel_handle(self.channel, fresh=True).send.remote(windows)
        self.flushes += 1
