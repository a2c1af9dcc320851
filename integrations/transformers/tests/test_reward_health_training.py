"""A real GRPO run on CPU with a gold reference beside a reward that pays for length.

The training reward pays for bytes; the gold checks the answer. The callback grades the
gold share concurrently with the reward, logs the pairs at every logging step, and with
``on_alert="raise"`` stops training at the logging step whose figures raised an alert (here
the ``unscored`` rule: a second reward function fails on every other completion).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gradewire import BaseGrader, MemorySink, StringThread
from gradewire.train import FailurePolicy, RewardHealthError
from gradewire_transformers import GradewireCallback, trl_reward
from trl_support import tiny_grpo


def pays_for_length(sample: StringThread) -> float:
    return min(len((sample.completion() or "").encode("utf-8", "surrogatepass")) / 32, 1.0)


def answer_is_there(sample: StringThread) -> float:
    return float(sample.metadata["answer"] in (sample.completion() or ""))


def flaky(sample: StringThread) -> float:
    if len(sample.completion() or "") % 2:
        raise ValueError("judge timed out")
    return 1.0


def run(tmp_path: Path, callback: GradewireCallback, rewards: list[Any], steps: int) -> Any:
    trainer = tiny_grpo(tmp_path, rewards, [callback], steps=steps)
    trainer.train()
    return trainer


def test_the_gold_share_is_graded_and_logged_at_every_logging_step(tmp_path):
    reward = trl_reward(BaseGrader.from_function("length", pays_for_length))
    sink = MemorySink()
    callback = GradewireCallback(
        reward,
        sinks=sink,
        gold=BaseGrader.from_function("gold", answer_is_there),
        gold_fraction=1.0,
    )
    run(tmp_path, callback, [reward], steps=3)
    assert [step for step, _ in sink.steps] == [1, 2, 3]
    for _, logs in sink.steps:
        assert logs["rewards/length/health/gold/pairs"] == 4  # the completions of a step
        assert logs["rewards/gold/score/count"] == 4
        assert logs["rewards/health/alerts"] == 0
        assert logs["rewards/length/health/latency_count"] == 4


def test_an_alert_stops_training_at_its_logging_step(tmp_path):
    reward = trl_reward(BaseGrader.from_function("length", pays_for_length))
    other = trl_reward(
        BaseGrader.from_function("flaky", flaky), failure=FailurePolicy(max_error_rate=None)
    )
    sink = MemorySink()
    callback = GradewireCallback(
        reward,
        other,
        sinks=sink,
        failure=FailurePolicy(max_error_rate=None),
        on_alert="raise",
    )
    with pytest.raises(RewardHealthError, match="unscored") as caught:
        run(tmp_path, callback, [reward, other], steps=20)
    (alert,) = caught.value.alerts
    assert alert.grader == "rewards/flaky"
    step, logs = sink.steps[-1]
    assert step == alert.step < 20
    assert logs["rewards/health/alerts"] == 1
