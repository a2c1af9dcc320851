"""Sinks: where `get_logs()` output goes, one step at a time.

The `Sink` protocol, `BaseSink` (input checks, increasing steps, rank gating, the
`TablePolicy`), the built-in memory, JSONL, console and fan-out sinks, and `BackgroundSink`
(in `sinks.background`). Sinks know nothing about graders: this folder imports `core`
only. Each name is imported when first used.
"""

from typing import TYPE_CHECKING

from gradewire.core._lazy import attach

if TYPE_CHECKING:
    from gradewire.sinks._base_sink import BaseSink
    from gradewire.sinks._console_sink import ConsoleSink
    from gradewire.sinks._fanout_sink import FanOutSink
    from gradewire.sinks._jsonl_sink import JsonlRun, JsonlSink, read_jsonl
    from gradewire.sinks._memory_sink import MemorySink
    from gradewire.sinks._rank import is_main_process, process_rank
    from gradewire.sinks._sink import Logs, Sink, StepLogs
    from gradewire.sinks._table_policy import PolicyState, TablePolicy
    from gradewire.sinks.background import (
        BackgroundSink,
        DeliveryReport,
        DeliverySettings,
        Rejection,
        read_spill,
        read_spill_configs,
    )

__all__ = [
    "BackgroundSink",
    "BaseSink",
    "ConsoleSink",
    "DeliveryReport",
    "DeliverySettings",
    "FanOutSink",
    "JsonlRun",
    "JsonlSink",
    "Logs",
    "MemorySink",
    "PolicyState",
    "Rejection",
    "Sink",
    "StepLogs",
    "TablePolicy",
    "is_main_process",
    "process_rank",
    "read_jsonl",
    "read_spill",
    "read_spill_configs",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(
        __name__,
        {
            "._base_sink": ["BaseSink"],
            "._console_sink": ["ConsoleSink"],
            "._fanout_sink": ["FanOutSink"],
            "._jsonl_sink": ["JsonlRun", "JsonlSink", "read_jsonl"],
            "._memory_sink": ["MemorySink"],
            "._rank": ["is_main_process", "process_rank"],
            "._sink": ["Logs", "Sink", "StepLogs"],
            "._table_policy": ["PolicyState", "TablePolicy"],
            ".background": [
                "BackgroundSink",
                "DeliveryReport",
                "DeliverySettings",
                "Rejection",
                "read_spill",
                "read_spill_configs",
            ],
        },
        submodules=["background"],
    )
