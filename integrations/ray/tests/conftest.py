"""One local Ray instance for the whole test session (Ray takes seconds to start).

- ``ray_instance`` (session): ``ray.init(num_cpus=2, include_dashboard=False,
  log_to_driver=False)`` from a scratch folder (the workers' working directory), shut down
  at the end; yields the ``ray`` module.
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
def ray_instance(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    import ray

    # Graders defined in the test modules are pickled by reference: the workers import
    # them from the same folders (and the shared helpers in tests/).
    here = Path(__file__).resolve().parent
    paths = [str(here), str(here.parents[2] / "tests"), os.environ.get("PYTHONPATH", "")]
    # Ray's workers start in the directory the driver was in at ray.init: a scratch folder,
    # so a relative path written by a worker (a README block's write_parquet("graded"),
    # run later in this session) never lands in the repository.
    here_before = Path.cwd()
    os.chdir(tmp_path_factory.mktemp("ray-workers"))
    try:
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            log_to_driver=False,
            runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in paths if p)}},
        )
    finally:
        os.chdir(here_before)
    try:
        yield ray
    finally:
        ray.shutdown()
