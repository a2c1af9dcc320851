"""How the delivery worker sees the wrapped sink: healthy or not, and when to try again."""

from __future__ import annotations

import logging
import random
import time
from pathlib import Path

__all__ = ["SinkHealth", "describe"]

logger = logging.getLogger("gradewire")


def describe(error: BaseException) -> str:
    """An error as ``"Type: message"``, as the delivery report shows it."""
    return f"{type(error).__name__}: {error}"


class SinkHealth:
    """Failures of the wrapped sink, the backoff between attempts, and the outage notes.

    An outage is logged once as a warning when it starts and once when delivery resumes;
    the attempts in between go to the debug log, so a long outage does not flood it.
    """

    def __init__(self, label: str, initial_delay: float, max_delay: float) -> None:
        self._label = label  # names the sink in log messages
        self._initial_delay = initial_delay
        self._max_delay = max_delay
        self._rng = random.Random()
        self._attempt = 0
        self._outage_logged = False
        self.healthy = True
        self.failed_attempts = 0
        self.last_error: str | None = None
        self.retry_at = 0.0
        """When the next attempt is due (`time.monotonic`)."""
        self.probing = False
        """Send one entry per call: the sink is being tested, or a refused entry sought."""
        self._head_seq = 0  # the entry that last failed in a call of its own
        self.head_failures = 0
        """How often in a row that entry failed alone."""

    def succeeded(self, *, backlog: int) -> None:
        """A call went through; ``backlog`` is how many entries still wait on disk."""
        self.healthy = True
        self._attempt = 0
        self.retry_at = 0.0
        self.probing = False
        self.head_failures = 0
        if self._outage_logged and not backlog:
            self._outage_logged = False
            logger.info("%s: delivering again; everything kept on disk was replayed", self._label)

    def failed(self, error: Exception) -> None:
        """A call raised ``error``."""
        self.healthy = False
        self.failed_attempts += 1
        self.last_error = describe(error)

    def failed_alone(self, seq: int) -> None:
        """The entry ``seq`` failed in a call of its own (again, if it was the last to)."""
        self.head_failures = self.head_failures + 1 if seq == self._head_seq else 1
        self._head_seq = seq

    def back_off(self, directory: Path) -> None:
        """Wait before the next attempt (jittered, doubling up to the cap) and probe then."""
        delay = min(self._max_delay, self._initial_delay * 2.0 ** min(self._attempt, 60))
        self._attempt += 1
        self.retry_at = time.monotonic() + self._rng.uniform(0.0, delay)
        self.probing = True
        if not self._outage_logged:
            self._outage_logged = True
            logger.warning(
                "%s failed (%s); pending steps are kept in %s and retried in the background "
                "(backoff up to %gs)",
                self._label,
                self.last_error,
                directory,
                self._max_delay,
            )
        else:
            logger.debug("%s failed again: %s", self._label, self.last_error)

    def stalled(self, seconds: float, directory: Path) -> None:
        """A call has not returned for ``seconds``: count the sink as down until it does."""
        self.healthy = False
        if not self._outage_logged:
            self._outage_logged = True
            logger.warning(
                "%s has not answered for %gs; steps logged meanwhile are kept in %s until it does",
                self._label,
                seconds,
                directory,
            )
