"""Ray, imported on first use: the adapter imports without the extra, and says how to get it."""

from __future__ import annotations

import logging
import os
from typing import Any

from gradewire import MissingDependencyError

__all__ = ["import_ray", "pickle", "quiet_ray_data", "start_ray", "unpickle"]


def import_ray(purpose: str) -> Any:
    """The ``ray`` module with Ray Data loaded, or the pip command that installs it."""
    try:
        import ray
        import ray.data
    except ImportError as exc:
        raise MissingDependencyError("ray[data]", extra="ray", purpose=purpose) from exc
    return ray


def quiet_ray_data(ray: Any) -> None:
    """No progress bars or INFO lines from Ray Data: they would write through a live display."""
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    context.print_on_execution_start = False
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    # Its one warning says that the bars are off, which is what was asked for.
    logging.getLogger("ray.data._internal.progress").setLevel(logging.ERROR)


def start_ray(address: str | None, purpose: str) -> tuple[Any, bool]:
    """Ray, connected: to ``address``, else the running instance, else a new local one.

    Returns the module and whether this call started it (so the caller shuts it down).
    """
    ray = import_ray(purpose)
    if ray.is_initialized():
        return ray, False
    # The workers import what the graders name (a grader file's custom functions) from
    # the same places as this process: its PYTHONPATH and working folder.
    paths = [p for p in (os.environ.get("PYTHONPATH", ""), os.getcwd()) if p]
    # The dashboard is a web server nobody asked for; worker logs would write through
    # the live display, and every failure is in the results anyway.
    ray.init(
        address=address,
        include_dashboard=False,
        log_to_driver=False,
        logging_level=logging.WARNING,
        runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(paths)}},
    )
    return ray, True


def pickle(value: object) -> bytes:
    """``value`` as Ray ships it (cloudpickle: lambdas and local functions too)."""
    from ray import cloudpickle

    data: bytes = cloudpickle.dumps(value)  # type: ignore[no-untyped-call]
    return data


def unpickle(data: bytes) -> Any:
    """What `pickle` wrote."""
    from ray import cloudpickle

    return cloudpickle.loads(data)
