"""The pairwise judge on the real llama.cpp server, both orders asked for every sample."""

from __future__ import annotations

from real_model_support import SAMPLES, N, judge_model, within_deadline

import gradewire as gw
from gradewire.judges import pair


def pairs() -> list[gw.StringThread]:
    # Each sample's answer against the next sample's: a different, off-topic answer.
    rows = (SAMPLES * (N // len(SAMPLES) + 2))[: N + 1]
    return [
        pair(gw.StringThread([("user", q), ("assistant", a)]), rows[i + 1][1])
        for i, (q, a, _) in enumerate(rows[:N])
    ]


async def test_a_real_pairwise_judge_with_swap(llama_server):
    grader = gw.PairwiseJudgeGrader(
        "preferred", judge_model(llama_server), "The answer that answers the question", swap=True
    )
    grades = await within_deadline(grader.grade_many(pairs(), max_concurrency=1))
    logs = grader.get_logs()
    judged = [g for g in grades if g is not None]
    # Every pair is a verdict or a counted error, never a silent score.
    assert len(judged) + logs["score/error_count"] + logs["score/abstained_count"] == N
    assert len(judged) >= N - 1
    for grade in judged:
        assert grade.value in (0.0, 0.5, 1.0)
        assert len(grade.info["calls"]) == 2  # both orders
        assert sorted(c["candidate_shown"] for c in grade.info["calls"]) == ["A", "B"]
        if grade.info["position_consistent"] is False:
            assert grade.value == 0.5
    assert logs["position_consistent/count"] == len(judged)
    assert logs["judge_calls/mean"] >= 2.0
