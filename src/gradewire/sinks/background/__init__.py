"""`BackgroundSink`: a tracker sink that never blocks or crashes the training step.

`log()` only enqueues; a worker thread delivers in batches, retries with backoff, spills to
disk while the tracker is down and replays in order. Imports `core` and the sink base in
`sinks`.
"""

from gradewire.sinks.background._background_sink import BackgroundSink
from gradewire.sinks.background._report import DeliveryReport, Rejection
from gradewire.sinks.background._settings import DeliverySettings
from gradewire.sinks.background._spill_format import read_spill, read_spill_configs

__all__ = [
    "BackgroundSink",
    "DeliveryReport",
    "DeliverySettings",
    "Rejection",
    "read_spill",
    "read_spill_configs",
]
