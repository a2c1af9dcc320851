"""One local Ray instance for the whole test session (Ray takes seconds to start).

- ``ray_instance`` (session): ``ray.init(num_cpus=2, include_dashboard=False,
  log_to_driver=False)``, shut down at the end; yields the ``ray`` module.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# Ray reports usage statistics to its makers unless told not to: tests talk to loopback only.
os.environ["RAY_USAGE_STATS_ENABLED"] = "0"


@pytest.fixture(scope="session")
def ray_instance() -> Iterator[Any]:
    import ray

    # Graders defined in the test modules are pickled by reference: the workers import
    # them from the same folders (and the shared helpers in tests/).
    here = Path(__file__).resolve().parent
    paths = [str(here), str(here.parents[2] / "tests"), os.environ.get("PYTHONPATH", "")]
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in paths if p)}},
    )
    try:
        yield ray
    finally:
        ray.shutdown()
