"""gradewire_verifiers.Rubric in real verifiers environments, the policy on a loopback server."""

from __future__ import annotations

import asyncio
import json
import math
import re
import statistics
from collections.abc import Iterator
from typing import Any

import pytest
import verifiers as vf
from datasets import Dataset
from openai import AsyncOpenAI

import gradewire as gw
from gradewire.train import FailurePolicy
from gradewire_verifiers import MASKED_METRIC, RewardMasked, Rubric
from support.judge_server import JudgeServer, Request

N = 6


def policy(request: Request) -> str:
    """The loopback server: a policy that says the number back, one off for 2 and 4; and a
    judge (asked with a rubric prompt) that passes answers under 10 words."""
    messages = request.json["messages"]
    text = messages[-1]["content"]
    if "verdict" in json.dumps(messages):  # the judge's prompt asks for a JSON verdict
        return json.dumps({"reasoning": "short enough", "verdict": "PASS"})
    i = int(re.search(r"What is (\d+)\?", text).group(1))  # type: ignore[union-attr]
    return f"The answer is {i + 1 if i in (2, 4) else i}."


@pytest.fixture
def server() -> Iterator[JudgeServer]:
    with JudgeServer(policy) as running:
        yield running


def dataset() -> Dataset:
    return Dataset.from_dict(
        {
            "question": [f"What is {i}?" for i in range(N)],
            "answer": [str(i) for i in range(N)],
            # row 1: the grader abstains; row 3: it fails
            "info": [{"skip": i == 1, "broken": i == 3, "topic": "t"} for i in range(N)],
        }
    )


def exact(sample: gw.StringThread) -> float | None:
    if sample.metadata.get("skip"):
        return None
    if sample.metadata.get("broken"):
        raise RuntimeError("the checker broke")
    return float(f"is {sample.metadata['answer']}." in (sample.completion() or ""))


def words(sample: gw.StringThread) -> float:
    return float(len((sample.completion() or "").split()))


def evaluate(rubric: Rubric, server: JudgeServer, rollouts: int = 2) -> Any:
    env = vf.SingleTurnEnv(dataset=dataset(), eval_dataset=dataset(), rubric=rubric)

    async def run() -> Any:
        async with AsyncOpenAI(base_url=server.base_url, api_key="k") as openai:
            client = vf.OpenAIChatCompletionsClient(openai)
            return await env.evaluate(
                client=client,
                model="policy",
                num_examples=N,
                rollouts_per_example=rollouts,
                on_progress=[],
            )

    return asyncio.run(run())


def test_errors_and_abstentions_are_masked_not_scored_zero(server: JudgeServer) -> None:
    correct = gw.BaseGrader.from_function("exact", exact)
    length = gw.BaseGrader.from_function("words", words)
    judge = gw.BinaryJudgeGrader(
        "brief",
        gw.OpenAIChatModel("judge", base_url=server.base_url, max_attempts=1),
        "The answer is brief",
    )
    rubric = Rubric([correct, judge], weights=[1.0, 0.5], metrics=[length])
    result = evaluate(rubric, server)
    outputs = result["outputs"]
    assert len(outputs) == 2 * N

    scored_rewards = []
    for output in outputs:
        i = output["example_id"]
        metrics = output["metrics"]
        assert metrics["words"] == 4.0
        assert metrics["brief"] == 1.0
        if i in (1, 3):
            assert math.isnan(metrics["exact"])
            assert metrics[MASKED_METRIC] == 1.0
            assert output["reward"] == 0.0  # the placeholder, flagged:
            assert output["error"]["error"] == "RewardMasked"
            why = "abstained" if i == 1 else "failed (RuntimeError: the checker broke)"
            assert f"exact: {why}" in output["error"]["message"]
            continue
        right = 0.0 if i in (2, 4) else 1.0
        assert metrics["exact"] == right
        assert metrics[MASKED_METRIC] == 0.0
        assert output["reward"] == right + 0.5
        assert output["error"] is None
        scored_rewards.append(right + 0.5)

    metadata = result["metadata"]
    assert metadata["avg_error"] == pytest.approx(4 / 12)
    assert math.isnan(metadata["avg_metrics"]["exact"])  # refused, not averaged with 0s
    assert metadata["avg_metrics"][MASKED_METRIC] == pytest.approx(4 / 12)

    logs = rubric.get_logs()
    assert logs["exact/score/count"] == 8
    assert logs["exact/score/abstained_count"] == 2
    assert logs["exact/score/error_count"] == 2
    assert logs["exact/score/mean"] == pytest.approx(4 / 8)
    assert logs["reward/score/count"] == len(scored_rewards) == 8
    assert logs["reward/score/mean"] == pytest.approx(statistics.mean(scored_rewards))
    assert logs["reward/score/std"] == pytest.approx(statistics.stdev(scored_rewards))
    assert logs["reward/score/error_count"] == 4
    assert logs["words/score/mean"] == 4.0
    assert logs["brief/judge_calls/mean"] == 1.0


def test_a_failing_metric_only_grader_never_masks_the_reward(server: JudgeServer) -> None:
    def flaky(sample: gw.StringThread) -> float:
        if sample.metadata.get("broken"):
            raise RuntimeError("no length today")
        return 1.0

    correct = gw.BaseGrader.from_function(
        "right", lambda s: float(f"is {s.metadata['answer']}." in (s.completion() or ""))
    )
    rubric = Rubric([correct])
    rubric.add_metric(gw.BaseGrader.from_function("flaky", flaky))
    outputs = evaluate(rubric, server, rollouts=1)["outputs"]
    for output in outputs:
        i = output["example_id"]
        assert output["error"] is None
        assert output["metrics"][MASKED_METRIC] == 0.0
        assert output["reward"] == (0.0 if i in (2, 4) else 1.0)
        assert math.isnan(output["metrics"]["flaky"]) == (i == 3)


def test_the_thread_carries_prompt_completion_answer_and_info(server: JudgeServer) -> None:
    seen: list[gw.StringThread] = []

    def record(sample: gw.StringThread) -> float:
        seen.append(sample)
        return 1.0

    evaluate(Rubric([gw.BaseGrader.from_function("record", record)]), server, rollouts=1)
    first = next(t for t in seen if t.last_user_content() == "What is 0?")
    assert [turn.role for turn in first.turns] == ["user", "assistant"]
    assert first.completion() == "The answer is 0."
    assert first.metadata["answer"] == "0"
    assert first.metadata["topic"] == "t"


def test_refusals() -> None:
    one = gw.BaseGrader.from_function("one", lambda s: 1.0)
    with pytest.raises(gw.InvalidTypeError, match="graders"):
        Rubric([lambda completion: 1.0])  # type: ignore[list-item]
    with pytest.raises(gw.InvalidInputError, match="2 weights for 1 graders"):
        Rubric([one], weights=[1.0, 2.0])
    with pytest.raises(gw.InvalidInputError, match="named 'one'"):
        Rubric([one], metrics=[gw.BaseGrader.from_function("one", lambda s: 0.0)])
    with pytest.raises(gw.InvalidInputError, match="finite"):
        Rubric([one], weights=[math.inf])
    assert issubclass(RewardMasked, vf.Error)
    assert issubclass(RewardMasked, gw.GradewireError)


def test_the_failure_policy_sets_the_placeholder_and_fails_fast() -> None:
    def broken(sample: gw.StringThread) -> float:
        raise RuntimeError("the checker broke")

    with pytest.warns(DeprecationWarning, match=r"Rubric\(failure_reward=\.\.\.\) is deprecated"):
        old = Rubric([gw.BaseGrader.from_function("one", lambda s: 1.0)], failure_reward=-1.0)
    assert old.failure == FailurePolicy(failure_value=-1.0)
    with pytest.raises(gw.InvalidInputError, match="failure_value is None"):
        Rubric([gw.BaseGrader.from_function("one", lambda s: 1.0)], failure=FailurePolicy())
    rubric = Rubric(
        [gw.BaseGrader.from_function("broken", broken)],
        failure=FailurePolicy(failure_value=-1.0, max_error_rate=None),
    )
    states: list[dict[str, Any]] = [{"prompt": "q", "completion": "a", "answer": "a"}]
    asyncio.run(rubric.score_group(states))
    assert states[0]["reward"] == -1.0
    stops = Rubric([gw.BaseGrader.from_function("broken", broken)])
    group: list[dict[str, Any]] = [{"prompt": "q", "completion": "a"} for _ in range(2)]
    with pytest.raises(gw.GraderFailingError, match="2 of 2 samples of a batch"):
        asyncio.run(stops.score_group(group))
