"""A real GRPO run on CPU whose judge injects faults: it neither hangs nor lies.

The judge (HTTP on 127.0.0.1) gives each distinct request a fate by a seeded hash of its
content: a 429 with ``Retry-After`` first, an answer later than the grade's timeout, or
none at all. The rates are raised above the 10% / 2% / 1% of the fast test
(``test_reward_loop_faults.py``) so that a run of a few dozen completions meets each kind.
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any

import gradewire as gw
from fault_support import HashedFaults, hashed_judge
from gradewire import MemorySink
from gradewire.train import FailurePolicy
from gradewire_transformers import GradewireCallback, trl_reward
from trl_support import tiny_grpo

STEPS = 4
TIMEOUT = 1.0


def test_a_grpo_run_against_a_faulty_judge_finishes_and_masks_every_failure(tmp_path: Path):
    faults = HashedFaults(
        seed=5, slow_delay=3 * TIMEOUT, rate_429=0.3, rate_slow=0.15, rate_silent=0.1
    )
    calls: list[list[float | None]] = []
    with hashed_judge(faults) as server:
        model = gw.OpenAIChatModel("judge", base_url=server.base_url, api_key="k")
        grader = gw.BinaryJudgeGrader("judge", model, "The completion is text")
        reward = trl_reward(grader, timeout=TIMEOUT, failure=FailurePolicy(max_error_rate=None))

        async def judge(prompts: Any, completions: Any, **kwargs: Any) -> list[float | None]:
            values = await reward(prompts=prompts, completions=completions, **kwargs)
            calls.append(list(values))
            return values

        sink = MemorySink()
        callback = GradewireCallback(reward, sinks=sink, monitor=False)
        trainer = tiny_grpo(tmp_path, [judge], [callback], steps=STEPS, batch=8)
        trainer.train()

    assert trainer.state.global_step == STEPS  # no step hung
    assert len(calls) == STEPS == len(sink.steps)
    # Each kind of fault was met, and the 429s were graded after their retry.
    assert all(faults.injected.get(kind, 0) >= 1 for kind in ("429", "slow", "silent"))
    trl_logs = [entry for entry in trainer.state.log_history if "rewards/judge/mean" in entry]
    assert [step for step, _ in sink.steps] == list(range(1, STEPS + 1))
    for values, (_, logs), trl in zip(calls, sink.steps, trl_logs, strict=True):
        failed = sum(v is None for v in values)
        # No failure reaches the trainer as a number: None, masked by TRL ...
        assert all(v is None or v == 1.0 for v in values)
        # ... typed (a timeout) and counted at its step ...
        assert logs["rewards/judge/score/error_count"] == failed
        assert logs["rewards/judge/score/timeout_count"] == failed
        assert logs["rewards/judge/score/count"] == len(values) - failed
        # ... and TRL's own mean is over the graded completions only (NaN when none were).
        graded = [v for v in values if v is not None]
        expected = statistics.mean(graded) if graded else math.nan
        assert trl["rewards/judge/mean"] == expected or (
            math.isnan(expected) and math.isnan(trl["rewards/judge/mean"])
        )
    assert sum(v is None for values in calls for v in values) >= (
        faults.injected["slow"] + faults.injected["silent"]
    )
