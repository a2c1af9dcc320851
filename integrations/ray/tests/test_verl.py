"""veRL's reward loop (0.9.1) on CPU: the reward workers score, the trainer's Tracking logs.

veRL cannot train here (it needs GPUs), so the tests run the parts that touch gradewire
exactly as veRL runs them: its `RewardLoopManager` starts real reward-loop worker actors
that load `verl_reward.py` by path and call ``compute_score`` through veRL's own naive
reward manager; the rewards of a step come back through ``compute_rm_score`` (or
per sample, as veRL's agent loop asks its reward workers); and a real
``verl.utils.tracking.Tracking`` logs each step to MLflow on a sqlite store.
"""

from __future__ import annotations

import asyncio
import gc
import random
import statistics
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import gradewire as gw
import verl_reward
from gradewire.train._gold import in_gold_share
from gradewire_ray import drain_reward_stats, install_verl_hook, verl_compute_score
from verl_support import (
    assert_numbers_equal,
    batch,
    expected_logs,
    reward_config,
    sample,
    tokenizer_folder,
)

STEPS = 5
PER_STEP = 400  # 2,000 samples in all


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tokenizer_folder(tmp_path_factory.mktemp("tokenizer"))


@pytest.fixture
def mlflow_uri(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    return uri


def test_four_reward_workers_five_steps_reach_tracking_exactly(
    ray_instance: Any, tokenizer: Path, mlflow_uri: str
) -> None:
    import mlflow
    from mlflow import MlflowClient
    from verl.experimental.reward_loop.reward_loop import RewardLoopManager
    from verl.utils.tracking import Tracking

    install_verl_hook()
    tracking = Tracking("gradewire-verl", "five-steps", default_backend=["mlflow"])
    run_id = mlflow.active_run().info.run_id
    manager = RewardLoopManager(reward_config(tokenizer, workers=4))
    keys = verl_reward.compute_score.reward.keys()  # type: ignore[attr-defined]
    expected_per_step = []
    try:
        for step in range(1, STEPS + 1):
            samples = [sample(i) for i in range((step - 1) * PER_STEP, step * PER_STEP)]
            if step < STEPS:
                out = manager.compute_rm_score(batch(samples))
                assert out.meta_info["reward_extra_keys"] == keys
                scores = out.batch["rm_scores"].sum(-1).tolist()
                assert list(out.non_tensor_batch["score"]) == pytest.approx(scores)
            else:
                # As veRL's agent loop does: each sample to a random reward worker.
                refs = [
                    random.choice(manager.reward_loop_workers).compute_score.remote(batch([s]))
                    for s in samples
                ]
                infos = [r["reward_extra_info"] for r in ray_instance.get(refs)]
                assert all(list(info) == keys for info in infos)
                flagged = [info for info in infos if info["error"] or info["abstained"]]
                assert flagged
                assert all(info["score"] == 0.0 for info in flagged)
                assert all(info["error_message"] for info in flagged)
            tracking.log({"critic/score/mean": 0.0}, step=step)
            expected_per_step.append(expected_logs(samples))
    finally:
        tracking.finish()
        for worker in manager.reward_loop_workers:
            ray_instance.kill(worker)
    client = MlflowClient(mlflow_uri)
    logged = client.get_run(run_id).data.metrics
    assert "critic/score/mean" in logged
    for step, expected in enumerate(expected_per_step, start=1):
        got = {}
        for key in expected:
            if isinstance(expected[key], int | float):
                history = client.get_metric_history(run_id, key)
                values = [m.value for m in history if m.step == step]
                assert len(values) == 1, (key, step, history)
                got[key] = values[0]
        assert_numbers_equal(expected, got)
        assert (
            got["rewards/answer/score/count"]
            + got["rewards/answer/score/abstained_count"]
            + (got["rewards/answer/score/error_count"])
            == PER_STEP
        )


def test_validation_samples_go_to_their_own_section_with_histograms(ray_instance: Any) -> None:
    drain_reward_stats()  # whatever an earlier test left
    samples = [sample(i, split="test") for i in range(40)] + [sample(i) for i in range(40, 80)]

    async def score_all() -> list[dict[str, Any]]:
        return await asyncio.gather(
            *(
                verl_reward.compute_score(
                    data_source=s["data_source"],
                    solution_str=s["response"],
                    ground_truth=s["ground_truth"],
                    extra_info=s["extra_info"],
                )
                for s in samples
            )
        )

    answers = asyncio.run(score_all())
    assert {tuple(a) for a in answers} == {tuple(verl_reward.compute_score.reward.keys())}  # type: ignore[attr-defined]
    logs = drain_reward_stats()
    val = expected_logs(samples[:40], "val-rewards")
    train = expected_logs(samples[40:], "rewards")
    assert_numbers_equal(
        {**val, **train}, {k: v for k, v in logs.items() if isinstance(v, int | float)}
    )
    assert logs["val-rewards/answer/score/histogram"] == val["val-rewards/answer/score/histogram"]
    assert (
        logs["rewards/answer/exact/score/histogram"]
        == train["rewards/answer/exact/score/histogram"]
    )
    assert drain_reward_stats() == {}


def test_the_sync_function_through_veRLs_thread_pool(ray_instance: Any, tokenizer: Path) -> None:
    from verl.experimental.reward_loop.reward_loop import RewardLoopManager

    drain_reward_stats()
    manager = RewardLoopManager(reward_config(tokenizer, workers=1, name="compute_score_sync"))
    try:
        samples = [sample(i) for i in range(120)]
        out = manager.compute_rm_score(batch(samples))
    finally:
        for worker in manager.reward_loop_workers:
            ray_instance.kill(worker)
    scores = list(out.non_tensor_batch["score"])
    flagged = out.non_tensor_batch["error"] + out.non_tensor_batch["abstained"]
    assert all(s == -1.0 for s, f in zip(scores, flagged, strict=True) if f)
    logs = {k: v for k, v in drain_reward_stats().items() if isinstance(v, int | float)}
    assert_numbers_equal(expected_logs(samples), logs)


def test_the_channel_the_trainer_opens_outlives_the_workers_that_send(ray_instance: Any) -> None:
    name = "opened-by-the-trainer"
    drain_reward_stats(name)  # what the hook does in the trainer: open it, keep nothing
    gc.collect()

    @ray_instance.remote(num_cpus=0)
    class Worker:
        """A reward worker of another process, scoring with a compute_score of its own."""

        def score(self, indices: list[int]) -> None:
            import gradewire as gw
            from gradewire_ray import verl_compute_score

            grader = gw.BaseGrader.from_function(
                "exact", lambda s: float(s.completion() == s.metadata["ground_truth"])
            )
            compute_score = verl_compute_score(grader, channel=name)

            async def run() -> None:
                await asyncio.gather(
                    *(
                        compute_score(solution_str=str(i % 3), ground_truth="0", extra_info={})
                        for i in indices
                    )
                )

            asyncio.run(run())

    worker = Worker.remote()  # type: ignore[attr-defined]
    ray_instance.get(worker.score.remote(list(range(90))))
    ray_instance.kill(worker)  # a worker the trainer ends (or that dies): its figures stay
    logs = drain_reward_stats(name)
    assert logs["rewards/exact/score/count"] == 90
    assert logs["rewards/exact/score/mean"] == pytest.approx(30 / 90, rel=1e-12)


def gold_check(sample: gw.StringThread) -> float:
    return float((sample.completion() or "").strip() == str(sample.metadata["ground_truth"]))


def test_a_gold_grader_grades_its_share_beside_the_reward(ray_instance: Any) -> None:
    drain_reward_stats()
    gold = gw.BaseGrader.from_function("gold", gold_check)
    compute_score = verl_compute_score(verl_reward.grader(), gold=gold, gold_fraction=0.5)
    reward = compute_score.reward  # type: ignore[attr-defined]
    samples = [sample(i) for i in range(80)]

    async def score_all() -> list[dict[str, Any]]:
        return await asyncio.gather(
            *(
                compute_score(
                    data_source=s["data_source"],
                    solution_str=s["response"],
                    ground_truth=s["ground_truth"],
                    extra_info=s["extra_info"],
                )
                for s in samples
            )
        )

    answers = asyncio.run(score_all())
    logs = drain_reward_stats()
    threads = [
        reward.thread(s["data_source"], s["response"], s["ground_truth"], s["extra_info"])
        for s in samples
    ]
    share = [i for i, t in enumerate(threads) if in_gold_share(t, 0.5)]
    assert 0 < len(share) < len(samples)
    golds = [gold_check(threads[i]) for i in share]
    assert logs["rewards/gold/score/count"] == len(share)
    assert logs["rewards/gold/score/mean"] == pytest.approx(statistics.mean(golds), rel=1e-12)
    # The pairs: the gold's share where the reward scored too.
    paired = [i for i in share if answers[i]["error"] == 0.0 and answers[i]["abstained"] == 0.0]
    assert logs["rewards/answer/health/gold/pairs"] == len(paired)
    assert logs["rewards/answer/health/gold/gold_mean"] == pytest.approx(
        statistics.mean(gold_check(threads[i]) for i in paired), rel=1e-12
    )
    assert logs["rewards/answer/health/gold/proxy_mean"] == pytest.approx(
        statistics.mean(answers[i]["score"] for i in paired), rel=1e-12
    )
    # The reward's own figures are those of a run without a gold.
    expected = expected_logs(samples)
    assert logs["rewards/answer/score/mean"] == pytest.approx(
        expected["rewards/answer/score/mean"], rel=1e-12
    )
    with pytest.raises(gw.InvalidInputError, match="needs a channel"):
        verl_compute_score(verl_reward.grader(), channel=None, gold=gold)
