"""Grading and reward statistics on three nodes, one of which goes down mid-run.

The session's cluster (``conftest.py``) has a head node and two worker nodes on this
machine. Each test here removes a worker node while work runs on it, as a failing machine
would (its raylet, object store and workers are killed at once), and checks the figures
against the same rows graded in this process: counts, means, spreads, extremes,
abstentions, errors and histograms exact, every row once, nothing counted twice.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

import gradewire as gw
from dataset_support import (
    NodeRemover,
    assert_same,
    correct,
    flaky,
    graders,
    local_logs,
    records_batches,
    rows,
    stalls_on_a_worker_node,
)
from gradewire.eval import run_eval
from gradewire_ray import drain_reward_stats, grade_dataset, verl_compute_score
from gradewire_ray._channel import DEFAULT_CHANNEL, channel_handle
from gradewire_ray._eval_engine import ray_engine
from gradewire_ray._rows import default_row_thread
from verl_support import (
    assert_numbers_equal,
    batch,
    expected_logs,
    reward_config,
    sample,
    tokenizer_folder,
)

N = 6_000
BATCH = 300


def node_of(actor: Any) -> str:
    """The id of the node an actor runs on."""
    import ray

    return str(
        ray.get(actor.__ray_call__.remote(lambda _: ray.get_runtime_context().get_node_id()))
    )


def test_a_node_lost_mid_run_leaves_the_figures_exact_and_every_row_once(
    ray_instance: Any, node_loss: Any, tmp_path: Path
) -> None:
    marker, log, stalls = tmp_path / "stalled-on", tmp_path / "batches", tmp_path / "stalls"
    head = node_loss.head_node.node_id
    data = rows(N)
    # One batch stalls on a worker node half way in, with some of its rows graded (and
    # logged, in that attempt's grader copies); the node then goes down under it. Ray
    # runs that batch again, and any other block the node held, elsewhere.
    chosen = [
        gw.BaseGrader.from_function("correct", records_batches(correct, log, BATCH)),
        gw.BaseGrader.from_function(
            "flaky",
            records_batches(
                stalls_on_a_worker_node(flaky, marker, head, N // 3 + BATCH // 2), stalls, 1
            ),
        ),
    ]
    remover = NodeRemover(node_loss, marker)
    remover.start()
    try:
        result = grade_dataset(
            ray_instance.data.from_items(data, override_num_blocks=8),
            chosen,
            actors=3,
            batch_size=BATCH,
            num_cpus=1,
        )
    finally:
        victim = remover.finish()
    expected = local_logs(data)
    assert result.rows == N
    for key in ("correct", "flaky"):
        assert_same(expected[key], result.states[key].to_logs())
    flaky_logs = result.get_logs("flaky")
    assert flaky_logs["score/abstained_count"] == len(range(0, N, 11))
    assert flaky_logs["score/error_count"] == sum(1 for i in range(N) if i % 11 and not i % 17)
    values = [correct(default_row_thread(row)) for row in data]
    assert result.histograms["correct"] == gw.Histogram.of(values)
    scored = [v for row in data if (v := _flaky_value(row)) is not None]
    assert result.histograms["flaky"] == gw.Histogram.of(scored)
    ids = [row["id"] for row in result.dataset.select_columns(["id"]).take_all()]
    assert sorted(ids) == list(range(N))
    # The stalled row was graded twice: first on the lost node, and again elsewhere. (Batch
    # edges follow Ray's blocks, not multiples of BATCH, so the row itself is followed.)
    attempts = [line.split() for line in stalls.read_text().splitlines()]
    where = [node for answer, node in attempts if int(answer) == remover.row]
    assert where[0] == victim
    assert len(where) >= 2
    assert set(where) - {victim}
    firsts = [int(answer) for answer, _ in (line.split() for line in log.read_text().splitlines())]
    assert set(firsts) == set(range(0, N, BATCH))


def _flaky_value(row: dict[str, Any]) -> float | None:
    try:
        grade = flaky(default_row_thread(row))
    except ValueError:
        return None
    return None if grade is None else grade.value


def test_an_eval_on_ray_loses_a_node_and_matches_a_local_run(
    ray_instance: Any, node_loss: Any, tmp_path: Path
) -> None:
    n = 3000
    data = tmp_path / "data.jsonl"
    lines = [json.dumps({**row, "id": f"q{row['id']}"}) for row in rows(n)]
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    marker = tmp_path / "stalled-on"
    head = node_loss.head_node.node_id
    stalling = [
        gw.BaseGrader.from_function("correct", correct),
        gw.BaseGrader.from_function("flaky", stalls_on_a_worker_node(flaky, marker, head, n // 2)),
    ]
    remover = NodeRemover(node_loss, marker)
    remover.start()
    try:
        on_ray = asyncio.run(
            run_eval(data, stalling, tmp_path / "ray", engine=ray_engine(actors=3))
        )
    finally:
        remover.finish()
    local = asyncio.run(run_eval(data, graders(), tmp_path / "local"))
    assert on_ray.outcome.graded == n
    results = (tmp_path / "ray" / "results.jsonl").read_text().splitlines()
    ids = [json.loads(line)["id"] for line in results]
    assert sorted(ids) == sorted(f"q{i}" for i in range(n))  # each once
    summaries = {
        name: json.loads((tmp_path / name / "summary.json").read_text())
        for name in ("local", "ray")
    }
    assert summaries["ray"]["metrics"] == summaries["local"]["metrics"]
    assert [s.n for s in on_ray.summaries] == [s.n for s in local.summaries]


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tokenizer_folder(tmp_path_factory.mktemp("tokenizer"))


def test_reward_figures_survive_the_loss_of_a_reward_workers_node(
    ray_instance: Any, node_loss: Any, tokenizer: Path
) -> None:
    from verl.experimental.reward_loop.reward_loop import RewardLoopManager

    head = node_loss.head_node.node_id
    drain_reward_stats()  # as the trainer's hook does first: the channel is the trainer's
    assert node_of(channel_handle(DEFAULT_CHANNEL)) == head
    manager = RewardLoopManager(reward_config(tokenizer, workers=3))
    try:
        workers = manager.reward_loop_workers
        nodes = [node_of(worker) for worker in workers]
        assert len(set(nodes)) == 3  # veRL puts one on each node
        # Step 1: veRL's batch path over every worker.
        first = [sample(i) for i in range(300)]
        manager.compute_rm_score(batch(first))
        assert_figures_equal(expected_logs(first), drain_reward_stats())
        # Step 2: per sample, as the agent loop asks; every call has returned (so its
        # figures are in the channel) when the node of one worker goes down.
        second = [sample(i) for i in range(300, 660)]
        refs = [workers[i % 3].compute_score.remote(batch([s])) for i, s in enumerate(second)]
        ray_instance.get(refs)
        lost = next(i for i, node in enumerate(nodes) if node != head)
        victim = next(n for n in node_loss.worker_nodes if n.node_id == nodes[lost])
        node_loss.remove_node(victim, allow_graceful=False)
        assert_figures_equal(expected_logs(second), drain_reward_stats())
        # Step 3: the workers left go on; nothing of step 2 comes back.
        third = [sample(i) for i in range(660, 900)]
        left = [w for i, w in enumerate(workers) if i != lost]
        refs = [left[i % 2].compute_score.remote(batch([s])) for i, s in enumerate(third)]
        ray_instance.get(refs)
        assert_figures_equal(expected_logs(third), drain_reward_stats())
    finally:
        for worker in manager.reward_loop_workers:
            ray_instance.kill(worker)


def assert_figures_equal(expected: dict[str, Any], got: dict[str, Any]) -> None:
    """Every number (counts exact, the rest to 1e-12) and every histogram, bin for bin."""
    assert_numbers_equal(expected, {k: v for k, v in got.items() if isinstance(v, int | float)})
    histograms = {k: v for k, v in expected.items() if isinstance(v, gw.Histogram)}
    assert histograms
    assert histograms == {k: v for k, v in got.items() if isinstance(v, gw.Histogram)}


def test_the_channel_runs_on_the_head_node_whoever_creates_it(ray_instance: Any) -> None:
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    head = ray.get_runtime_context().get_node_id()

    @ray.remote(num_cpus=0)
    def create(name: str) -> str:
        return node_of(channel_handle(name))

    node = next(n["NodeID"] for n in ray.nodes() if n["Alive"] and n["NodeID"] != head)
    on = NodeAffinitySchedulingStrategy(node, soft=False)
    assert ray.get(create.options(scheduling_strategy=on).remote("from-a-worker-node")) == head


def test_a_lost_channel_refuses_the_step_it_broke_then_counts_each_sample_once(
    ray_instance: Any,
) -> None:
    import ray

    name = "channel-that-is-lost"
    grader = gw.BaseGrader.from_function(
        "exact", lambda s: float(s.completion() == s.metadata["ground_truth"])
    )
    compute_score = verl_compute_score(grader, channel=name)

    def score(indices: range) -> None:
        async def run() -> None:
            await asyncio.gather(
                *(
                    compute_score(
                        data_source="math",
                        solution_str=str(i % 3),
                        ground_truth="0",
                        extra_info={"index": i},
                    )
                    for i in indices
                )
            )

        asyncio.run(run())

    def expected(indices: range) -> dict[str, float]:
        values = [float(i % 3 == 0) for i in indices]
        return {"count": len(values), "mean": sum(values) / len(values)}

    score(range(60))
    logs = drain_reward_stats(name)
    assert logs["rewards/exact/score/count"] == expected(range(60))["count"]
    score(range(60, 90))  # in the channel, then lost with it
    ray.kill(channel_handle(name))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # Ray frees the name once the actor is dead
        try:
            ray.get_actor(name)
        except ValueError:
            break
        time.sleep(0.1)
    # Sent (by the retry with a fresh handle) to the channel that takes its place: part
    # of the step that lost its first samples, so refused with them.
    score(range(90, 120))
    with pytest.raises(gw.GradewireError, match="was lost since the last drain"):
        drain_reward_stats(name)
    # The next step: the senders' handles are fresh again; none of the refused samples
    # comes back.
    score(range(120, 200))
    logs = drain_reward_stats(name)
    assert logs["rewards/exact/score/count"] == expected(range(120, 200))["count"]
    assert logs["rewards/exact/score/mean"] == pytest.approx(
        expected(range(120, 200))["mean"], rel=1e-12
    )
