"""One simulated 3-node Ray cluster for the whole test session (Ray takes seconds a node).

- ``ray_cluster`` (session): a ``ray.cluster_utils.Cluster`` on this machine, a head node
  with 2 CPUs and two worker nodes with 1 CPU each (the nodes share this machine's cores),
  in a Ray temp folder of its own; yields the cluster. Tests that remove a node put one
  back (``node_loss``).
- ``ray_instance`` (session): this process connected to that cluster as its driver, from
  a scratch folder (the workers' working directory); yields the ``ray`` module.
- ``node_loss``: the cluster, for a test that removes worker nodes; they are added again
  afterwards, so the next test has three nodes.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# Ray reports usage statistics to its makers unless told not to: tests talk to loopback only.
os.environ["RAY_USAGE_STATS_ENABLED"] = "0"

WORKER_NODES = 2
_NODE = {"num_cpus": 1, "object_store_memory": 200 * 1024**2}


@pytest.fixture(scope="session")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from ray.cluster_utils import Cluster

    # A cluster writes its address to <RAY_TMPDIR>/ray/ray_current_cluster, which any
    # ray.init() without an address on this machine would then join: a folder of its own
    # keeps other programs (and test sessions) off it. Short, for Ray's Unix sockets.
    folder = tempfile.mkdtemp(prefix="gw-ray-", dir="/tmp")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("RAY_TMPDIR", folder)
        cluster = Cluster(
            initialize_head=True,
            head_node_args={
                "num_cpus": 2,
                "object_store_memory": 400 * 1024**2,
                "include_dashboard": False,
            },
        )
        try:
            for _ in range(WORKER_NODES):
                cluster.add_node(**_NODE)
            yield cluster
        finally:
            cluster.shutdown()
            shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def ray_instance(ray_cluster: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
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
            address=ray_cluster.address,
            log_to_driver=False,
            runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in paths if p)}},
        )
    finally:
        os.chdir(here_before)
    try:
        yield ray
    finally:
        ray.shutdown()


@pytest.fixture
def node_loss(ray_cluster: Any) -> Iterator[Any]:
    """The cluster, for a test that removes worker nodes: they are put back afterwards."""
    yield ray_cluster
    while len(ray_cluster.worker_nodes) < WORKER_NODES:
        ray_cluster.add_node(**_NODE)
    ray_cluster.wait_for_nodes()
