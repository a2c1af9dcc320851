"""The sink contract: where `get_logs()` output goes (trackers, files, memory).

Also what a sink takes, checked: a step, one step's logs, a run's configuration. Every
sink refuses the same input with the same message, before anything is written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from gradewire.core._errors import InvalidInputError, InvalidTypeError
from gradewire.core._histogram import Histogram
from gradewire.core._logging_core import LogValue
from gradewire.core._table import Table

__all__ = [
    "Logs",
    "Sink",
    "StepLogs",
    "check_alert",
    "check_config",
    "check_logs",
    "check_step",
]

Logs = Mapping[str, LogValue]
"""What a sink receives: exactly what `BaseGrader.get_logs()` returns."""

StepLogs = tuple[int, Logs]
"""One step's logs, as batching sinks receive them: ``(step, logs)``."""


@runtime_checkable
class Sink(Protocol):
    """Anything that takes grader logs step by step.

    Keys look like ``judge/score/mean``; values are numbers (ints for counts) or `Table`s.
    A sink may also define ``log_many(entries: Sequence[StepLogs])`` to take several steps
    in one call; `BackgroundSink` uses it to send in batches; and ``alert(title, text,
    tags)`` to mark the run with tags and a tracker alert (`BaseSink.alert`), which
    `RewardLogger` calls for reward-health alerts.

    Steps must not decrease: a step lower than the last one raises `InvalidInputError`
    (W&B would drop it with only a warning); logging the same step again adds to it. After
    `close()`, `log` and `log_config` raise `SinkError`. Bad input raises
    `InvalidTypeError` / `InvalidInputError` before anything is written.
    """

    def log(self, logs: Logs, step: int) -> None:
        """Record the logs of one step."""

    def log_config(self, config: Mapping[str, Any]) -> None:
        """Record the run's configuration (grader specs, hyperparameters)."""

    def close(self) -> None:
        """Deliver what is pending and release resources; later calls do nothing."""


class BatchSink(Sink, Protocol):
    """A sink that can take several steps at once."""

    def log_many(self, entries: Sequence[StepLogs]) -> None:
        """Record several steps, in the order given."""


def check_step(step: object) -> int:
    """``step`` as a plain int, or an error saying what a step must be."""
    if isinstance(step, bool | np.bool_) or not isinstance(step, int | np.integer):
        raise InvalidTypeError(
            f"step must be an int, not {type(step).__name__} {step!r}; pass the training "
            "step or sample count, e.g. step=trainer.state.global_step"
        )
    value = int(step)
    if value < 0:
        raise InvalidInputError(f"step must be 0 or more, not {value}")
    return value


def check_logs(logs: object) -> dict[str, LogValue]:
    """A new dict of plain values (bools as ints), or an error naming the bad key and the fix."""
    if not isinstance(logs, Mapping):
        raise InvalidTypeError(
            f"logs must be a mapping such as grader.get_logs(), not {type(logs).__name__}"
        )
    out: dict[str, LogValue] = {}
    for key, value in logs.items():
        if not isinstance(key, str):
            raise InvalidTypeError(
                f"log keys must be str, got {type(key).__name__} {key!r}; use a name such as "
                "'judge/score/mean'"
            )
        if isinstance(value, np.generic):
            value = value.item()
        if isinstance(value, Table | Histogram):
            out[key] = value
        elif isinstance(value, bool):
            out[key] = int(value)
        elif isinstance(value, int):
            out[key] = int.__int__(value)
        elif isinstance(value, float):
            out[key] = float.__float__(value)
        else:
            raise InvalidTypeError(
                f"logs[{key!r}] is a {type(value).__name__}; a sink takes numbers (int, float, "
                "bool), gradewire.Table and gradewire.Histogram values: convert a tensor or "
                "array with float(value) or value.item(), put text in a Table, and drop keys "
                "that have no value"
            )
    return out


def check_config(config: object) -> dict[str, Any]:
    """A shallow dict copy of a run configuration with str keys."""
    if not isinstance(config, Mapping):
        raise InvalidTypeError(
            f"config must be a mapping such as {{'learning_rate': 1e-5}}, "
            f"not {type(config).__name__}"
        )
    for key in config:
        if not isinstance(key, str):
            raise InvalidTypeError(
                f"config keys must be str, got {type(key).__name__} {key!r}; use str(key)"
            )
    return dict(config)


def check_alert(title: object, text: object, tags: object) -> dict[str, str]:
    """A new dict of the alert's tags, or an error saying what an alert takes."""
    for name, value in (("title", title), ("text", text)):
        if not isinstance(value, str):
            raise InvalidTypeError(f"an alert's {name} must be a str, not {type(value).__name__}")
    if not isinstance(tags, Mapping):
        raise InvalidTypeError(f"an alert's tags must be a mapping, not {type(tags).__name__}")
    for key, value in tags.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise InvalidTypeError(
                f"an alert's tags map str to str; {key!r}: {value!r} is not: use str(value)"
            )
    return dict(tags)
