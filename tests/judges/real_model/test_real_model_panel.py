"""A panel of three judges on the real llama.cpp server: verdicts, lean, α, quorum.

The 135M model passes nearly everything on a PASS/FAIL criterion, which leaves α
undefined; two range judges (scored from logprobs, so their values vary) make the
panel's α a real figure, checked against the ``krippendorff`` package.
"""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from real_model_support import N, judge_model, samples, within_deadline

import gradewire as gw


def panel(url: str, *extra: gw.BaseGrader) -> gw.JudgePanel:
    model = judge_model(url)
    judges = [
        gw.BinaryJudgeGrader("helpful", model, "The response answers the question"),
        gw.RangeJudgeGrader("clear", model, "The answer is clear"),
        gw.RangeJudgeGrader("correct", model, "The answer is factually correct"),
        *extra,
    ]
    return gw.JudgePanel("panel", judges, aggregate="median")


async def test_a_panel_of_three_real_judges(llama_server):
    grader = panel(llama_server)
    grades = await within_deadline(grader.grade_many(samples(), max_concurrency=1))
    logs = grader.get_logs()
    judged = [g for g in grades if g is not None]
    # Every sample is scored or a counted abstention (quorum 2 of 3), never a silent 0.
    assert len(judged) + logs.get("score/abstained_count", 0) == N
    assert len(judged) >= N - 1
    rows = {key: [] for key in ("helpful", "clear", "correct")}
    for grade in judged:
        verdicts = grade.info["verdicts"]
        assert len(grade.children) == len(verdicts) >= 2
        for child in grade.children:
            assert child.reasoning  # each judge's reasoning is in the tree
            assert verdicts[child.grader_key] == child.value
        assert grade.value == pytest.approx(float(np.median(list(verdicts.values()))))
        for key, column in rows.items():
            column.append(verdicts.get(key, np.nan))
    for key, column in rows.items():
        leans = [v - g.value for v, g in zip(column, judged, strict=True) if not np.isnan(v)]
        assert logs[f"{key}/lean/mean"] == pytest.approx(np.mean(leans), abs=1e-12)
    reference = krippendorff.alpha(
        reliability_data=np.array(list(rows.values())), level_of_measurement="interval"
    )
    assert logs["krippendorff_alpha/mean"] == pytest.approx(reference, abs=1e-9)


async def test_a_judge_that_cannot_be_reached_is_left_to_the_quorum(llama_server):
    # Port 9 on loopback (discard) refuses the connection: a judge that always fails.
    down = gw.BinaryJudgeGrader(
        "down",
        gw.OpenAIChatModel("smollm2", base_url="http://127.0.0.1:9/v1", max_attempts=1),
        "The response answers the question",
    )
    grader = panel(llama_server, down)
    assert [j.grader_key for j in grader.judges] == ["helpful", "clear", "correct", "down"]
    grades = await within_deadline(grader.grade_many(samples()[:2], max_concurrency=1))
    logs = grader.get_logs()
    assert logs["down/score/error_count"] == 2
    for grade in grades:
        assert grade is not None
        assert set(grade.info["failed"]) == {"down"}
        assert "down" not in grade.info["verdicts"]
