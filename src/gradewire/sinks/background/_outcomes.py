"""What a finished call to the wrapped sink means: settle, retry later, or set aside.

An entry refused alone with `InvalidInputError` is set aside at once. One that fails alone
``max_attempts`` times in a row is tried once more beside the entry after it (a *suspect*
job); if that one goes through, the tracker is up, and if the first then fails once more
it is what the tracker refuses, so it is set aside (an outage that ended between the
calls leaves it delivered instead). Any other failure is an outage: back off, then probe
one entry per call.
"""

from __future__ import annotations

from pathlib import Path

from gradewire.core._errors import InvalidInputError
from gradewire.sinks.background._caller import Outcome
from gradewire.sinks.background._health import SinkHealth
from gradewire.sinks.background._ledger import Ledger
from gradewire.sinks.background._spill_format import Entry

__all__ = ["apply_outcome"]


def apply_outcome(
    outcome: Outcome,
    entries: tuple[Entry, ...],
    *,
    health: SinkHealth,
    ledger: Ledger,
    directory: Path,
    backlog: bool,
) -> None:
    """Record ``outcome`` of the call that carried ``entries`` (``backlog``: more on disk)."""
    if outcome.refused is not None:
        head, after = entries
        health.failed(outcome.refused)
        ledger.set_aside(head, outcome.refused)
        ledger.accepted(after)
        health.succeeded(backlog=backlog)
        return
    if outcome.done:
        ledger.accepted(*entries[: outcome.done])
    if outcome.error is None:
        health.succeeded(backlog=backlog)
        return
    head = entries[outcome.done]
    for _ in range(outcome.failed_calls):
        health.failed(outcome.error)
    if isinstance(outcome.error, InvalidInputError):  # InvalidTypeError too
        if outcome.call_size == 1:
            # The sink refused this entry itself: retrying cannot help, and it would hold
            # back every entry behind it.
            health.head_failures = 0
            ledger.set_aside(head, outcome.error)
            return
        health.probing = True  # find the refused entry: one per call, at once
        health.retry_at = 0.0
        return
    if outcome.call_size == 1:
        health.failed_alone(head.seq)
    health.back_off(directory)
