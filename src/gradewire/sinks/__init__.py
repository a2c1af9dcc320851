"""Sinks: where `get_logs()` output goes, one step at a time.

The `Sink` protocol, `BaseSink` (input checks, increasing steps, rank gating, the
`TablePolicy`), the built-in memory, JSONL, console and fan-out sinks, and `BackgroundSink`
(in `sinks.background`). Sinks know nothing about graders: this folder imports `core`
only. Each name is imported when first used.
"""

from gradewire.core._lazy import attach

TYPE_CHECKING = False  # typing's, without importing typing: type checkers take it as true

# The public names, one line each: from <module> import <Name> as <Name> (gradewire.core._lazy).
if TYPE_CHECKING:
    from gradewire.sinks._base_sink import BaseSink as BaseSink
    from gradewire.sinks._console_sink import ConsoleSink as ConsoleSink
    from gradewire.sinks._fanout_sink import FanOutSink as FanOutSink
    from gradewire.sinks._jsonl_sink import JsonlRun as JsonlRun
    from gradewire.sinks._jsonl_sink import JsonlSink as JsonlSink
    from gradewire.sinks._jsonl_sink import read_jsonl as read_jsonl
    from gradewire.sinks._memory_sink import MemorySink as MemorySink
    from gradewire.sinks._rank import is_main_process as is_main_process
    from gradewire.sinks._rank import process_rank as process_rank
    from gradewire.sinks._sink import Logs as Logs
    from gradewire.sinks._sink import Sink as Sink
    from gradewire.sinks._sink import StepLogs as StepLogs
    from gradewire.sinks._table_policy import PolicyState as PolicyState
    from gradewire.sinks._table_policy import TablePolicy as TablePolicy
    from gradewire.sinks.background import BackgroundSink as BackgroundSink
    from gradewire.sinks.background import DeliveryReport as DeliveryReport
    from gradewire.sinks.background import DeliverySettings as DeliverySettings
    from gradewire.sinks.background import Rejection as Rejection
    from gradewire.sinks.background import read_spill as read_spill
    from gradewire.sinks.background import read_spill_configs as read_spill_configs

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(__name__, submodules=["background"])
