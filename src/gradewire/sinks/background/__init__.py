"""`BackgroundSink`: a tracker sink that never blocks or crashes the training step.

`log()` only enqueues; a worker thread delivers in batches, retries with backoff, spills to
disk while the tracker is down and replays in order. Imports `core` and the sink base in
`sinks`.
"""

from gradewire.core._lazy import attach

TYPE_CHECKING = False  # typing's, without importing typing: type checkers take it as true

# The public names, one line each: from <module> import <Name> as <Name> (gradewire.core._lazy).
if TYPE_CHECKING:
    from gradewire.sinks.background._background_sink import BackgroundSink as BackgroundSink
    from gradewire.sinks.background._report import DeliveryReport as DeliveryReport
    from gradewire.sinks.background._report import Rejection as Rejection
    from gradewire.sinks.background._settings import DeliverySettings as DeliverySettings
    from gradewire.sinks.background._spill_format import read_spill as read_spill
    from gradewire.sinks.background._spill_format import read_spill_configs as read_spill_configs

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(__name__)
