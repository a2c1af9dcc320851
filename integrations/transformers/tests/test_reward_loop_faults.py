"""A reward loop that never hangs or lies: trl_reward against a judge that injects faults.

The judge (a real HTTP server on 127.0.0.1) answers 10% of the samples with a 429 and a
``Retry-After`` first, 2% after more than the grade's timeout and 1% never. TRL's reward
function is driven as the trainer drives it (one call per step, a batch of completions),
without the trainer, so the test is fast; ``test_reward_health_training.py`` holds the
GRPO runs.
"""

from __future__ import annotations

import asyncio
from typing import Any

import gradewire as gw
from fault_support import draw_faults, faulty_judge, sample_text
from gradewire import GradeTimeoutError, MemorySink, RewardLogger
from gradewire.train import FailurePolicy
from gradewire_transformers import trl_reward

STEPS = 4
BATCH = 64  # 16 prompts x 4 generations, TRL's batch for one reward call
TIMEOUT = 1.0  # the documented bound: trl_reward(timeout=...) bounds each grade
GUARD = 30 * TIMEOUT  # only so that a hang fails the test instead of freezing it


def judge(server: Any) -> gw.BinaryJudgeGrader:
    model = gw.OpenAIChatModel("judge", base_url=server.base_url, api_key="k")
    return gw.BinaryJudgeGrader("judge", model, "The answer states a number")


async def run_steps(reward: Any, logger: RewardLogger) -> list[tuple[list[Any], dict[str, Any]]]:
    steps = []
    for step in range(STEPS):
        ids = range(step * BATCH, (step + 1) * BATCH)
        prompts = ["What is 2+2?"] * BATCH
        completions = [sample_text(i) for i in ids]
        values = await asyncio.wait_for(reward(prompts=prompts, completions=completions), GUARD)
        steps.append((values, logger.step(step + 1)))
    return steps


def test_faults_reach_trl_as_none_typed_and_counted_at_their_step():
    faults = draw_faults(STEPS * BATCH, seed=30, slow_delay=3 * TIMEOUT)
    assert (len(faults.rate_limited), len(faults.slow), len(faults.silent)) == (26, 5, 3)
    with faulty_judge(faults) as server:
        grader = judge(server)
        # The monitor's unscored-share alert is right to fire here; it is tested elsewhere.
        logger = RewardLogger(grader, sinks=MemorySink(), monitor=False)
        reward = trl_reward(grader, timeout=TIMEOUT, failure=FailurePolicy(max_error_rate=0.5))
        reward.attach(logger)
        steps = asyncio.run(run_steps(reward, logger))

    for step, (values, logs) in enumerate(steps):
        ids = range(step * BATCH, (step + 1) * BATCH)
        failing = [i for i in ids if i in faults.failing]
        # No failure reaches the trainer as a number: TRL gets None, which it masks.
        assert [i for i, v in zip(ids, values, strict=True) if v is None] == failing
        assert all(v == 1.0 for v in values if v is not None)
        # Each failure is counted at its own step, typed as a timeout.
        assert logs["rewards/judge/score/error_count"] == len(failing)
        assert logs["rewards/judge/score/timeout_count"] == len(failing)
        assert logs["rewards/judge/score/count"] == BATCH - len(failing)
        assert logs["rewards/judge/score/abstained_count"] == 0
    # Every rate-limited sample was asked again after its 429 and graded.
    assert all(faults.requests[i] >= 2 for i in faults.rate_limited)
    assert sum(len([v for v in values if v is None]) for values, _ in steps) == 8


def test_the_failure_type_is_the_timeout_error():
    faults = draw_faults(8, seed=1, rate_429=0.0, rate_slow=0.0, rate_silent=0.25, slow_delay=1)
    with faulty_judge(faults) as server:
        grader = judge(server)
        outcomes = asyncio.run(
            asyncio.wait_for(
                grader._attempt_many(
                    [
                        gw.StringThread([("user", "q"), ("assistant", sample_text(i))])
                        for i in range(8)
                    ],
                    8,
                    0.3,
                ),
                GUARD,
            )
        )
    failed = {i for i, o in enumerate(outcomes) if not isinstance(o, gw.Grade)}
    assert failed == set(faults.silent)
    assert all(isinstance(outcomes[i], GradeTimeoutError) for i in failed)
