"""verl_compute_score fails fast on a failing grader and bounds each grade (no Ray needed)."""

from __future__ import annotations

import asyncio
import pickle
from typing import Any

import pytest

from gradewire import BaseGrader, GraderFailingError, InvalidInputError, StringThread
from gradewire.train import FailurePolicy
from gradewire_ray import verl_compute_score


def typo(sample: StringThread) -> float:
    return float(sample.metadata["anwser"] == sample.completion())


def call(compute_score: Any, i: int) -> Any:
    try:
        return compute_score(
            data_source="math",
            solution_str=f"answer {i}",
            ground_truth="4",
            extra_info={"index": i, "question": f"q{i}"},
        )
    except GraderFailingError as exc:
        return exc


def test_every_sample_of_a_window_failing_stops_the_run():
    compute_score = verl_compute_score(
        BaseGrader.from_function("g", typo),
        sync=True,
        channel=None,
        failure=FailurePolicy(failure_value=0.0, error_window=16),
    )
    outcomes = [call(compute_score, i) for i in range(17)]
    scores = outcomes[:15]
    assert all(o["score"] == 0.0 and o["error"] == 1.0 for o in scores)  # failure_score
    assert all(isinstance(o, GraderFailingError) for o in outcomes[15:])
    error = outcomes[15]
    assert isinstance(error.__cause__, KeyError)
    assert "verl_compute_score(...)" in str(error)


def test_the_bound_can_be_turned_off_and_is_kept_when_pickled():
    import pickle

    compute_score = verl_compute_score(
        BaseGrader.from_function("g", typo),
        sync=True,
        channel=None,
        failure=FailurePolicy(failure_value=0.0, max_error_rate=None),
    )
    assert all(call(compute_score, i)["error"] == 1.0 for i in range(80))
    reward = pickle.loads(pickle.dumps(compute_score.reward))  # type: ignore[attr-defined]
    assert reward.fail_fast.max_error_rate is None


def test_a_timeout_scores_the_failure_score_flagged_as_an_error():
    async def hangs(sample: StringThread) -> float:
        await asyncio.Event().wait()
        return 1.0

    compute_score = verl_compute_score(
        BaseGrader.from_function("g", hangs), sync=True, channel=None, timeout=0.1
    )
    answer = call(compute_score, 0)
    assert (answer["score"], answer["error"]) == (0.0, 1.0)
    assert "GradeTimeoutError" in answer["error_message"]
    with pytest.raises(ValueError, match="timeout"):
        verl_compute_score(BaseGrader.from_function("g", hangs), channel=None, timeout=0)


def test_the_failure_policy_is_the_one_knob_and_the_old_name_warns():
    with pytest.warns(DeprecationWarning, match=r"failure_score=\.\.\.\) is deprecated: pass fail"):
        compute_score = verl_compute_score(
            BaseGrader.from_function("g", typo), sync=True, channel=None, failure_score=-1.0
        )
    reward = compute_score.reward
    assert reward.failure == FailurePolicy(failure_value=-1.0)
    assert reward.fail_fast.window == FailurePolicy().error_window
    assert call(compute_score, 0)["score"] == -1.0
    with pytest.raises(InvalidInputError, match="veRL needs a number"):
        verl_compute_score(BaseGrader.from_function("g", typo), failure=FailurePolicy())
    # The policy survives the pickling veRL ships the function by.
    assert pickle.loads(pickle.dumps(reward)).failure == reward.failure
