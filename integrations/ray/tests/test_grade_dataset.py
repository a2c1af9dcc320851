"""grade_dataset on a real local Ray instance: exact figures, columns, tables, retries."""

from __future__ import annotations

import asyncio
import math
import os
from pathlib import Path
from typing import Any

import pytest
from ray.data.expressions import col

import gradewire as gw
from dataset_support import assert_same, correct, graders, local_logs, rows
from gradewire_ray import grade_dataset
from gradewire_ray._rows import default_row_thread

N = 30_000


@pytest.fixture(scope="module")
def graded(ray_instance: Any) -> Any:
    dataset = ray_instance.data.from_items(rows(N), override_num_blocks=8)
    return grade_dataset(dataset, graders(), batch_size=1000)


@pytest.fixture(scope="module")
def expected() -> dict[str, dict[str, float]]:
    return local_logs(rows(N))


def test_merged_figures_equal_one_process_on_30k_rows(graded: Any, expected: Any) -> None:
    assert graded.rows == N
    for key in ("correct", "flaky"):
        assert_same(expected[key], graded.states[key].to_logs())
    flaky_logs = graded.get_logs("flaky")
    assert flaky_logs["score/abstained_count"] == len(range(0, N, 11))
    assert flaky_logs["score/error_count"] == sum(1 for i in range(N) if i % 11 and not i % 17)
    assert graded.get_logs()["correct/score/mean"] == expected["correct"]["score/mean"] or (
        math.isclose(graded.get_logs()["correct/score/mean"], expected["correct"]["score/mean"])
    )


def test_histograms_add_up_to_the_scored_values(graded: Any) -> None:
    values = [correct(default_row_thread(row)) for row in rows(N)]
    assert graded.histograms["correct"] == gw.Histogram.of(values)
    # flaky's scores are near a million: all above the default [0, 1] edges, none lost
    flaky_hist = graded.get_logs("flaky")["score/histogram"]
    assert flaky_hist.above == graded.states["flaky"].stats["score"].count
    assert sum(flaky_hist.counts) == 0


def test_each_row_gets_value_status_reasoning_and_error(graded: Any) -> None:
    by_id = {row["id"]: row for row in graded.dataset.filter(expr=col("id") < 40).take_all()}
    assert sorted(by_id) == list(range(40))
    assert by_id[1]["correct/value"] == correct(default_row_thread(rows(2)[1]))
    assert by_id[1]["flaky/status"] == "ok"
    assert by_id[1]["flaky/reasoning"] == "reason 1"
    assert by_id[11]["flaky/status"] == "abstained"
    assert by_id[11]["flaky/value"] is None
    assert "returned None" in by_id[11]["flaky/reasoning"]
    assert by_id[17]["flaky/status"] == "error"
    assert by_id[17]["flaky/error"] == "ValueError: no judgement for 17"
    assert "__gradewire_state__" not in graded.dataset.columns()


def test_tables_hold_the_best_and_worst_rows_within_the_bound(graded: Any) -> None:
    tables = graded.tables["flaky"]
    scored = tables["score/scored_samples"]
    assert scored.headers[:2] == ["Prompt", "Completion"]
    scores = [row[-1] for row in scored.rows]
    assert len(scores) == 100
    everything = [math.sin(i) * 1e3 + 1e6 for i in range(N) if i % 11 and i % 17]
    assert max(scores) == max(everything)
    assert min(scores) == min(everything)
    unscored = tables["score/unscored_samples"]
    assert len(unscored.rows) == 100
    errors = {row[-1] for row in unscored.rows}
    assert any(e.startswith("ValueError") for e in errors)
    assert any(e.startswith("abstained") for e in errors)


def test_a_worker_that_dies_is_retried_and_counted_once(ray_instance: Any, tmp_path: Path) -> None:
    marker = tmp_path / "died"

    def dies_once(sample: gw.StringThread) -> float:
        if sample.metadata["answer"] == 1500 and not marker.exists():
            marker.touch()
            os._exit(1)  # the whole actor process goes, mid-task
        return correct(sample)

    data = rows(3000)
    dataset = ray_instance.data.from_items(data, override_num_blocks=3)
    result = grade_dataset(
        dataset, [gw.BaseGrader.from_function("correct", dies_once)], batch_size=100
    )
    assert marker.exists()
    assert_same(local_logs(data)["correct"], result.states["correct"].to_logs())
    ids = [row["id"] for row in result.dataset.select_columns(["id"]).take_all()]
    assert sorted(ids) == list(range(3000))


def test_a_row_that_is_no_sample_is_an_error_of_every_grader(ray_instance: Any) -> None:
    data = [*rows(5), {"id": 99, "text": "no prompt here", "answer": 1}]
    result = grade_dataset(ray_instance.data.from_items(data), graders())
    for key in ("correct", "flaky"):
        assert result.states[key].to_logs()["score/error_count"] >= 1
    (bad,) = result.dataset.filter(expr=col("id") == 99).take_all()
    assert bad["correct/status"] == "error"
    assert "no 'messages' field and no 'prompt' field" in bad["correct/error"]


def test_a_completion_in_another_column_is_an_error_until_it_is_named(ray_instance: Any) -> None:
    data = [{"id": i, "prompt": f"{i}?", "response": str(i), "answer": i} for i in range(6)]
    dataset = ray_instance.data.from_items(data)
    refused = grade_dataset(dataset, graders())
    assert refused.states["correct"].to_logs()["score/error_count"] == 6
    (first,) = refused.dataset.filter(expr=col("id") == 0).take_all()
    assert "completion_key='response'" in first["correct/error"]
    named = grade_dataset(dataset, graders(), completion_key="response")
    assert named.states["correct"].to_logs()["score/error_count"] == 0
    assert named.get_logs("correct")["score/count"] == 6
    with pytest.raises(gw.InvalidInputError, match="one or the other"):
        grade_dataset(dataset, graders(), to_thread=default_row_thread, completion_key="x")


async def _slow_half(sample: gw.StringThread) -> gw.Grade:
    await asyncio.sleep(0.01)
    return gw.Grade(0.5, "slow", reasoning="waited")


def test_async_graders_and_a_judge_on_a_loopback_server(ray_instance: Any) -> None:
    from support.judge_server import JudgeServer

    with JudgeServer(lambda request: '{"reasoning": "fine", "verdict": "PASS"}') as server:
        model = gw.OpenAIChatModel("judge", base_url=server.base_url, max_concurrency=64)
        judge = gw.BinaryJudgeGrader("judge", model, "The answer is right.")
        slow = gw.BaseGrader.from_function("slow", _slow_half)
        result = grade_dataset(
            ray_instance.data.from_items(rows(300)), [judge, slow], actors=2, concurrency=8
        )
        assert len(server.requests) == 300
        assert server.max_in_flight <= 2 * 8
    assert result.get_logs("judge")["score/mean"] == 1.0
    assert result.get_logs("judge")["score/count"] == 300
    assert result.get_logs("slow")["score/count"] == 300


def test_bad_arguments_say_what_to_pass(ray_instance: Any) -> None:
    grader = gw.BaseGrader.from_function("one", lambda s: 1.0)
    with pytest.raises(gw.InvalidTypeError, match=r"ray\.data\.Dataset"):
        grade_dataset([{"prompt": "x"}], [grader])
    dataset = ray_instance.data.from_items(rows(3))
    with pytest.raises(gw.InvalidInputError, match="actors must be an int >= 1"):
        grade_dataset(dataset, [grader], actors=0)
    with pytest.raises(gw.InvalidInputError, match="share a key"):
        grade_dataset(dataset, [grader, grader])
    with pytest.raises(gw.InvalidTypeError, match="from_function"):
        grade_dataset(dataset, [lambda s: 1.0])  # type: ignore[list-item]
