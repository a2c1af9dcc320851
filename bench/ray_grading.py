"""Grading on Ray beside one process, on 1, 2 and 3 simulated nodes: where Ray pays off.

The grader is a `BinaryJudgeGrader` whose judge is a loopback OpenAI-compatible server
(`tests/support/judge_server.py` in its bench mode, in a process of its own) that answers every
call after 50 ms: the shape of an LLM-judged eval or reward, with the model's time
replaced by a fixed wait.

Measured in one run:

* **one process**: ``grade_many`` over N rows with 128 calls in flight: rows/s, and the
  CPU it spends a row;
* for each node count K (``--nodes``, default 1 2 3): a ``ray.cluster_utils.Cluster`` on
  this machine, a head node and K-1 worker nodes of 1 CPU each; its start, and this
  process joining it (``ray.init(address=...)``, what a job on a running cluster pays);
  then `grade_dataset` with K actors (Ray Data spreads them, one a node), 64 calls in
  flight each: twice on 64·K rows (the fixed cost of a call: starting the actors, the
  merge; the lower of the two) and once on N rows. The per-row cost is the difference
  over the extra rows; the CPU a row is read from /proc, for the actors, and for this
  driver with Ray's node processes (raylets, the control store).

What one machine can show: the fixed costs a job pays as nodes are added, what spreading
actors and blocks over nodes costs (all traffic on loopback), and the CPU each actor
spends a row, hence the rate one actor reaches on a core of its own. What it cannot:
more rows/s from more nodes (the simulated nodes share this machine's cores, so the
rate stays flat or falls as nodes are added), network latency and bandwidth between
machines, node start-up on real hardware (here nodes start one after another, on busy
cores), and a judge that keeps up with many actors.

The estimate printed last: A actors on cores of their own grade A x min(64 / 50 ms,
1 / actor CPU a row) rows/s; a job on a running cluster pays joining it plus the fixed
cost of a call; one process grades at min(128 / 50 ms, 1 / its CPU a row). Ray is ahead
past fixed / (1 / one-process rate - 1 / Ray's rate) rows.

Run: ``python bench/ray_grading.py [--rows 8000] [--nodes 1 2 3]``
(needs ``pip install 'gradewire[ray]'``; Linux, for /proc).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import gradewire as gw

SERVER = Path(__file__).resolve().parent.parent / "tests" / "support" / "judge_server.py"
LATENCY = 0.05
ANSWER = json.dumps({"reasoning": "The answer is right.", "verdict": "PASS"})
ONE_PROCESS = 128  # calls in flight in one process
PER_ACTOR = 64  # calls in flight in each actor
_TICK = os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def server_process() -> Iterator[tuple[str, int]]:
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "--latency", str(LATENCY), "--text", ANSWER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline())
        yield f"http://127.0.0.1:{port}/v1", process.pid
    finally:
        assert process.stdin is not None
        process.stdin.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


def judge(base_url: str) -> gw.BaseGrader:
    model = gw.OpenAIChatModel("judge", base_url=base_url, max_concurrency=1024)
    return gw.BinaryJudgeGrader("judge", model, "The answer is correct.", sample_tables=False)


def rows(n: int) -> list[dict[str, object]]:
    # Distinct prompts: identical ones would be shared into one judge call.
    return [
        {"prompt": f"Question {i}: what is {i} + {i}?", "completion": str(2 * i)} for i in range(n)
    ]


def _stat(pid: int | str) -> list[bytes] | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    return stat[stat.rfind(b")") + 2 :].split()


def map_actors() -> set[int]:
    """The pids of Ray Data's map actors (``ray::MapWorker...``) running now."""
    found = set()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            title = Path(f"/proc/{name}/cmdline").read_bytes()
        except OSError:
            continue
        if title.startswith(b"ray::MapWorker"):
            found.add(int(name))
    return found


def tree_cpu(skip: set[int]) -> float:
    """CPU seconds of this process and the processes below it, except the subtrees of
    ``skip`` (and of the map actors: `ActorCpu` counts those).

    Ray's node processes (control store, raylets and their agents) are children of this
    process when it starts the cluster. What an exited worker spent is not counted:
    the raylet does not collect it.
    """
    skip = skip | map_actors()
    parents: dict[int, int] = {}
    seconds: dict[int, float] = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (fields := _stat(name)) is not None:
            parents[int(name)] = int(fields[1])
            seconds[int(name)] = sum(int(v) for v in fields[11:15]) / _TICK
    total = 0.0
    me = os.getpid()
    for pid, cpu in seconds.items():
        node: int | None = pid
        while node is not None and node not in (me, 0, 1) and node not in skip:
            node = parents.get(node)
        if node == me:
            total += cpu
    return total


class ActorCpu(threading.Thread):
    """Samples the CPU of Ray Data's map actors (``ray::MapWorker...``) while a call runs."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.seen: dict[int, float] = {}
        self.done = threading.Event()
        self.sample()
        # Actors of an earlier call may still be going away: only what they spend from
        # now on counts.
        self.before = dict(self.seen)

    def run(self) -> None:
        while not self.done.wait(0.05):
            self.sample()

    def sample(self) -> None:
        for pid in map_actors():
            if (fields := _stat(pid)) is not None:
                cpu = (int(fields[11]) + int(fields[12])) / _TICK
                self.seen[pid] = max(cpu, self.seen.get(pid, 0.0))

    def stop(self) -> float:
        self.sample()
        self.done.set()
        self.join()
        return sum(cpu - self.before.get(pid, 0.0) for pid, cpu in self.seen.items())


async def one_process(base_url: str, n: int) -> tuple[float, float]:
    """Seconds and CPU seconds to grade ``n`` rows here."""
    from gradewire_ray._rows import default_row_thread

    grader = judge(base_url)
    threads = [default_row_thread(r) for r in rows(n)]
    await grader.grade_many(threads[:ONE_PROCESS], max_concurrency=ONE_PROCESS)  # warm
    grader.clear_logs()
    times = os.times()
    start, cpu = time.perf_counter(), times.user + times.system
    await grader.grade_many(threads, max_concurrency=ONE_PROCESS)
    times = os.times()
    seconds, cpu = time.perf_counter() - start, times.user + times.system - cpu
    assert grader.log_state().to_logs()["score/count"] == n
    return seconds, cpu


@dataclass
class Call:
    seconds: float
    cpu: float  # this process (the driver) and Ray's node processes, actors apart
    actor_cpu: float


def on_ray(base_url: str, n: int, actors: int, server_pid: int) -> Call:
    """`grade_dataset` over ``n`` rows, actors started included."""
    import ray.data

    from gradewire_ray import grade_dataset

    # At least a block an actor, so that every actor gets work even in the small calls.
    dataset = ray.data.from_items(rows(n), override_num_blocks=max(actors, min(16, n // 256)))
    sampler = ActorCpu()
    sampler.start()
    cpu = tree_cpu({server_pid})
    start = time.perf_counter()
    graded = grade_dataset(dataset, [judge(base_url)], actors=actors, concurrency=PER_ACTOR)
    seconds = time.perf_counter() - start
    cpu = tree_cpu({server_pid}) - cpu
    actor_cpu = sampler.stop()
    assert graded.states["judge"].to_logs()["score/count"] == n, graded.get_logs("judge")
    return Call(seconds, cpu, actor_cpu)


@dataclass
class Nodes:
    nodes: int
    start_s: float
    join_s: float
    fixed_s: float
    rate: float  # rows/s once running
    cpu_ms: float  # a row: the driver and Ray's node processes
    actor_cpu_ms: float  # a row: the actors


def on_nodes(base_url: str, n: int, k: int, server_pid: int) -> Nodes:
    import ray
    from ray.cluster_utils import Cluster

    from gradewire_ray._ray import quiet_ray_data

    # The cluster's address file goes to a folder of its own: no other ray.init() on
    # this machine joins it. Short, for Ray's Unix sockets.
    folder = tempfile.mkdtemp(prefix="gw-ray-bench-", dir="/tmp")
    os.environ["RAY_TMPDIR"] = folder
    start = time.perf_counter()
    cluster = Cluster(
        initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False}
    )
    try:
        for _ in range(k - 1):
            cluster.add_node(num_cpus=1)
        start_s = time.perf_counter() - start
        start = time.perf_counter()
        ray.init(address=cluster.address, log_to_driver=False, logging_level="WARNING")
        join_s = time.perf_counter() - start
        try:
            quiet_ray_data(ray)
            small_rows = PER_ACTOR * k
            small = min(
                (on_ray(base_url, small_rows, k, server_pid) for _ in range(2)),
                key=lambda call: call.seconds,
            )
            big = on_ray(base_url, n, k, server_pid)
        finally:
            ray.shutdown()
    finally:
        cluster.shutdown()
        del os.environ["RAY_TMPDIR"]
        shutil.rmtree(folder, ignore_errors=True)
    extra = n - small_rows
    per_row = (big.seconds - small.seconds) / extra
    return Nodes(
        nodes=k,
        start_s=start_s,
        join_s=join_s,
        fixed_s=small.seconds - small_rows * per_row,
        rate=1 / per_row if per_row > 0 else float("inf"),
        cpu_ms=1000 * (big.cpu - small.cpu) / extra,
        actor_cpu_ms=1000 * (big.actor_cpu - small.actor_cpu) / extra,
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=8000)
    parser.add_argument("--nodes", type=int, nargs="+", default=[1, 2, 3])
    args = parser.parse_args(argv)
    n = args.rows
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"  # loopback only
    with server_process() as (base_url, server_pid):
        local_s, local_cpu = asyncio.run(one_process(base_url, n))
        results = [on_nodes(base_url, n, k, server_pid) for k in args.nodes]
    local_rate, local_cpu_ms = n / local_s, 1000 * local_cpu / n
    print(f"judge: {LATENCY * 1000:.0f} ms a call; {n:,} rows; 2-core machine, nodes simulated")
    print(
        f"one process, {ONE_PROCESS} in flight: {local_rate:7,.0f} rows/s, "
        f"{local_cpu_ms:.2f} ms CPU a row"
    )
    print(
        f"{'nodes':>5} {'start s':>8} {'join s':>7} {'fixed s':>8} {'rows/s':>8} "
        f"{'driver+nodes':>13} {'actors':>7}  (a call: {PER_ACTOR} in flight per actor, "
        "one actor a node; CPU ms a row)"
    )
    for r in results:
        print(
            f"{r.nodes:>5} {r.start_s:>8.1f} {r.join_s:>7.1f} {r.fixed_s:>8.1f} "
            f"{r.rate:>8,.0f} {r.cpu_ms:>13.2f} {r.actor_cpu_ms:>7.2f}"
        )
    first, last = results[0], results[-1]
    # On real machines every actor has a core: its rate is bounded by its own CPU a row
    # and by its calls in flight over the judge's latency; one process likewise.
    actor_ms = sum(r.actor_cpu_ms for r in results) / len(results)
    per_actor = min(PER_ACTOR / LATENCY, 1000 / actor_ms)
    alone = min(ONE_PROCESS / LATENCY, 1000 / local_cpu_ms)
    # A job's fixed cost: joining the cluster and a call's own. On real machines the
    # actors start side by side, as the one actor of the smallest run did; here those of
    # the largest run started on the same two cores: the two bound it.
    low = first.join_s + first.fixed_s
    high = last.join_s + last.fixed_s
    print(
        f"derived: one actor on a core of its own {per_actor:,.0f} rows/s "
        f"({actor_ms:.2f} ms CPU a row, mean of the runs); one process on a core "
        f"{alone:,.0f} rows/s; a job pays {low:.1f} s ({first.nodes} node) to {high:.1f} s "
        f"({last.nodes} nodes, actors starting on shared cores)"
    )
    for actors in (2, 4, 8, 16, 32, 128):
        ray_rate = actors * per_actor
        if ray_rate <= alone:
            print(f"{actors:4d} actors ({ray_rate:7,.0f} rows/s): never ahead of one process")
            continue
        gain = 1 / alone - 1 / ray_rate
        print(
            f"{actors:4d} actors ({ray_rate:7,.0f} rows/s if the judge keeps up): ahead of one "
            f"process from about {low / gain:,.0f} to {high / gain:,.0f} rows"
        )


if __name__ == "__main__":
    main()
