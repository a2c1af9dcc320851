"""The WandbSink that ``gradewire sync`` delivers a spill directory's W&B entries with.

Offered as the ``spill_target.wandb`` entry point (`gradewire.core._integrations`): given the
delivery target a `WandbSink` left with its spill files (`WandbSink.delivery_target`), it
makes a sink that resumes the same run (same project and id, ``resume="allow"``) and logs
the way the first one did (prefix, step metric, tables).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gradewire import InvalidInputError
from gradewire_wandb._sink import WandbSink

__all__ = ["sink_for_target"]

_EXPLICIT = ("project", "name", "dir", "mode")


def sink_for_target(target: Mapping[str, Any], *, closed: bool) -> WandbSink:
    """A sink that resumes the run of ``target`` and logs to it as its first sink did.

    The run is finished once everything is in it (the sink starts it again). ``closed``
    is not needed: W&B keeps no status to end a run with, finishing it is all a close did.

    Raises:
        InvalidInputError: The target names no run (its id was never known).
    """
    run = target.get("run")
    if not isinstance(run, Mapping) or not isinstance(run.get("id"), str):
        raise InvalidInputError(
            "the spill files name no W&B run id (the sink started its run without one); "
            "read them with gradewire.sinks.read_spill, or give WandbSink "
            "init_kwargs={'id': ...} so that they name one"
        )
    init = target.get("init")
    # Only the plain values WandbSink.delivery_target writes: a spill folder is data anyone
    # who could write to it may have planted, and init's `settings` (a mapping) names the
    # server wandb sends this environment's API key to.
    kwargs: dict[str, Any] = (
        {str(k): v for k, v in init.items() if isinstance(v, str | int | float | bool) or v is None}
        if isinstance(init, Mapping)
        else {}
    )
    explicit = {key: kwargs.pop(key, None) for key in _EXPLICIT}
    if isinstance(run.get("project"), str):
        explicit["project"] = run["project"]
    kwargs["id"] = run["id"]
    kwargs["resume"] = "allow"
    options = target.get("sink")
    sink_options = dict(options) if isinstance(options, Mapping) else {}
    return WandbSink(
        project=explicit["project"],
        name=explicit["name"],
        dir=explicit["dir"],
        mode=explicit["mode"],
        init_kwargs=kwargs,
        prefix=sink_options.get("prefix"),
        step_metric=sink_options.get("step_metric"),
        html=bool(sink_options.get("html", False)),
        incremental_tables=bool(sink_options.get("incremental_tables", False)),
        all_ranks=True,
    )
