"""judge_runs: a pairwise judge on two runs' paired samples, against the loopback server."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from gradewire import InvalidInputError, InvalidTypeError, run_sync
from gradewire.eval import JudgedComparison, MismatchedRunsError, judge_runs, paired_bootstrap
from gradewire.judges import BinaryJudgeGrader, PairwiseJudgeGrader
from support.eval_helpers import make_run
from support.judge_scripts import last_user, sections


def prefers_paris(request):
    first, second = sections(last_user(request), "answer")
    a, b = "Paris" in first, "Paris" in second
    label = "TIE" if a == b else "A" if a else "B"
    return json.dumps({"reasoning": "names Paris", "verdict": label})


def always_first(request):
    return json.dumps({"reasoning": "first", "verdict": "A"})


A = ["Paris", "Lyon", "Paris", "Nice", "Lyon", "Paris"]
B = ["Paris!", "Paris", "Lyon", "Paris", "Nice", "Paris is it"]


async def test_wins_ties_losses_and_the_interval(judge_server, make_judge, tmp_path):
    judge_server.handler = prefers_paris
    run_a = make_run(tmp_path / "a", {"g": [1] * 6}, completions=A)
    run_b = make_run(tmp_path / "b", {"g": [1] * 6}, completions=B)
    judge = PairwiseJudgeGrader("preferred", make_judge(), "Names Paris", swap=True)
    result = await judge_runs(run_a, run_b, judge, n_resamples=500, seed=3)
    assert isinstance(result, JudgedComparison)
    assert (result.wins, result.ties, result.losses) == (2, 3, 1)
    assert result.win_rate == pytest.approx((2 + 3 / 2) / 6)
    values = np.array([0.5, 1.0, 0.0, 1.0, 0.5, 0.5])
    reference = paired_bootstrap(np.zeros(6), values, n_resamples=500, seed=3)
    assert (result.ci_low, result.ci_high) == (reference.low, reference.high)
    assert result.position_consistency == 1.0
    # swap=True: every pair asked in both orders, counted on the server.
    assert len(judge_server.chat_requests) == 12
    data = result.to_dict()
    assert data["position_consistency"] == 1.0
    assert (data["wins"], data["ties"], data["losses"]) == (2, 3, 1)
    assert "B wins 2, ties 3, loses 1 of 6" in str(result)


async def test_a_position_biased_judge_shows_in_the_consistency(judge_server, make_judge, tmp_path):
    judge_server.handler = always_first
    run_a = make_run(tmp_path / "a", {"g": [1] * 6}, completions=A)
    run_b = make_run(tmp_path / "b", {"g": [1] * 6}, completions=B)
    judge = PairwiseJudgeGrader("preferred", make_judge(), "Names Paris", swap=True)
    result = await judge_runs(run_a, run_b, judge, n_resamples=200)
    assert result.position_consistency == 0.0
    assert result.ties == 6
    assert set(result.inconsistent) == {f"s{i}" for i in range(6)}
    assert "position consistency 0.000: 6 verdict(s) changed" in str(result)


async def test_pairs_are_checked_before_any_call(judge_server, make_judge, tmp_path):
    judge_server.handler = prefers_paris
    judge = PairwiseJudgeGrader("preferred", make_judge(), "Names Paris")
    run_a = make_run(tmp_path / "a", {"g": [1, 1]}, ids=["x", "y"])
    run_b = make_run(tmp_path / "b", {"g": [1, 1]}, ids=["y", "z"])
    other = make_run(tmp_path / "c", {"g": [1, 1]}, ids=["x", "y"])
    edited = [replace(r, prompt_hash="another question") for r in other.records]
    with pytest.raises(MismatchedRunsError, match="different prompts"):
        await judge_runs(run_a, replace(other, records=edited), judge)
    with pytest.raises(InvalidInputError, match="share no sample"):
        await judge_runs(
            make_run(tmp_path / "d", {"g": [1]}, ids=["p"]),
            make_run(tmp_path / "e", {"g": [1]}, ids=["q"]),
            judge,
        )
    with pytest.raises(InvalidTypeError, match="PairwiseJudgeGrader"):
        await judge_runs(run_a, run_b, BinaryJudgeGrader("b", make_judge(), "x"))  # type: ignore[arg-type]
    assert judge_server.chat_requests == []
    result = await judge_runs(run_a, run_b, judge, n_resamples=100)
    assert (result.only_a, result.only_b, result.n_pairs) == (("x",), ("z",), 1)


def test_sync_use(judge_server, make_judge, tmp_path):
    judge_server.handler = prefers_paris
    run_a = make_run(tmp_path / "a", {"g": [1] * 6}, completions=A)
    run_b = make_run(tmp_path / "b", {"g": [1] * 6}, completions=B)
    judge = PairwiseJudgeGrader("preferred", make_judge(), "Names Paris")
    result = run_sync(judge_runs(run_a, run_b, judge, n_resamples=100))
    assert result.position_consistency is None
    assert result.n_pairs == 6
