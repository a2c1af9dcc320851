"""RewardLogger under torch.distributed: 4 gloo processes on 127.0.0.1, one slice each.

The merged figures must equal one process grading every slice: statistics to 1e-12
relative, counts (abstentions, errors, groups) and histograms exactly.
"""

from __future__ import annotations

import math
import socket
from pathlib import Path
from typing import Any

import torch.multiprocessing as mp

from gradewire import (
    BaseGrader,
    CombinedGrader,
    Histogram,
    JsonlSink,
    RewardLogger,
    StringThread,
    run_sync,
)
from gradewire.sinks import read_jsonl

WORLD = 4
EDGES = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]


def score(sample: StringThread) -> float | None:
    text = sample.completion() or ""
    if text.endswith("?"):
        return None
    if text.endswith("!"):
        raise ValueError("no grade for shouting")
    return (len(text) % 11) / 10 + 0.01 * len(sample.metadata.get("tag", ""))


def length_only(sample: StringThread) -> float:
    return min(len(sample.completion() or "") / 30, 1.0)


def make_logger(sink: JsonlSink | None = None) -> RewardLogger:
    combo = CombinedGrader(
        "combo",
        [BaseGrader.from_function("score", score), BaseGrader.from_function("size", length_only)],
        weights=[2.0, 1.0],
    )
    return RewardLogger(combo, sinks=[] if sink is None else [sink], histogram_edges=EDGES)


def samples(step: int) -> list[StringThread]:
    out = []
    for i in range(40):
        ending = "?" if i % 7 == 0 else "!" if i % 13 == 5 else "."
        text = "w" * ((i * 7 + step) % 29) + ending
        tag = "x" * (i % 3)
        out.append(StringThread([("user", f"q{i // 4}"), ("assistant", text)], {"tag": tag}))
    return out


def rank_slice(step: int, rank: int) -> list[StringThread]:
    # Uneven slices, so ranks hold parts of the same prompt groups and different sizes.
    everything = samples(step)
    cuts = [0, 7, 19, 26, 40]
    return everything[cuts[rank] : cuts[rank + 1]]


def worker(rank: int, port: int, out: str) -> None:
    import torch.distributed as dist

    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD
    )
    try:
        # Every rank writes only if it is rank 0: the file must hold one writer's lines.
        reward_logger = make_logger(JsonlSink(out))
        for step in (1, 2):
            run_sync(reward_logger.grade(rank_slice(step, rank)))
            reward_logger.step(step)
        # A step where only rank 2 graded: the others hold no keys at all.
        if rank == 2:
            run_sync(reward_logger.grade(rank_slice(3, rank)))
        reward_logger.step(3)
        reward_logger.close()
    finally:
        dist.destroy_process_group()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def single_process() -> dict[int, dict[str, Any]]:
    reward_logger = make_logger()
    expected = {}
    for step in (1, 2):
        run_sync(reward_logger.grade(samples(step)))
        expected[step] = reward_logger.step(step)
    run_sync(reward_logger.grade(rank_slice(3, 2)))
    expected[3] = reward_logger.step(3)
    return expected


def test_four_gloo_ranks_merge_into_one_exact_figure(tmp_path: Path) -> None:
    out = tmp_path / "rank0.jsonl"
    context = mp.get_context("spawn")
    port = free_port()
    processes = [
        context.Process(target=worker, args=(rank, port, str(out))) for rank in range(WORLD)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=240)
    assert [p.exitcode for p in processes] == [0] * WORLD

    run = read_jsonl(out)
    assert [step for step, _ in run.steps] == [1, 2, 3]
    expected = single_process()
    for step, logs in run.steps:
        want = expected[step]
        assert logs.keys() == want.keys(), step
        if step < 3:
            assert want["rewards/combo/score/score/abstained_count"] > 0
            assert want["rewards/combo/score/score/error_count"] > 0
        for key, value in want.items():
            if "/health/latency_p" in key:
                continue  # seconds the grades took in two runs: no figure to match
            got = logs[key]
            exact = isinstance(value, Histogram | int) and not isinstance(value, bool)
            if exact:  # counts and histograms
                assert got == value, (step, key)
            else:
                assert math.isclose(got, value, rel_tol=1e-12, abs_tol=1e-15), (step, key)
