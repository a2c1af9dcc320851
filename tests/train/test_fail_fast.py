"""The training drivers stop on a failing grader (fail fast), time out and stay bounded."""

from __future__ import annotations

import asyncio
import logging
import pickle
from typing import Any

import pytest

from gradewire import (
    BaseGrader,
    GraderFailingError,
    GradingError,
    IgnoreGradeException,
    InvalidInputError,
    RewardLogger,
    StringThread,
    openrlhf_reward_func,
)
from gradewire.core import _logging_core
from gradewire.train import FailurePolicy

GUARD = 60.0


def samples(n: int, completion: str = "a") -> list[StringThread]:
    return [StringThread([("user", f"q{i}"), ("assistant", completion)]) for i in range(n)]


def typo(sample: StringThread) -> float:
    return float(sample.metadata["anwser"] == sample.completion())


async def test_reward_logger_stops_on_an_all_error_batch_with_the_first_traceback():
    reward_logger = RewardLogger(BaseGrader.from_function("correct", typo))
    with pytest.raises(GraderFailingError) as caught:
        await reward_logger.grade(samples(8))
    error = caught.value
    assert isinstance(error.__cause__, KeyError)
    assert "failed on 8 of 8 samples of a batch (every sample" in str(error)
    assert "KeyError: 'anwser'" in str(error)
    assert 'in typo\n    return float(sample.metadata["anwser"]' in str(error)
    assert "RewardLogger(...)" in str(error)
    # The failing batch is in the logs all the same, for the step that reports it.
    assert reward_logger.step(1)["rewards/correct/score/error_count"] == 8


async def test_reward_logger_fail_fast_counts_failures_not_abstentions():
    def abstains(sample: StringThread) -> float:
        raise IgnoreGradeException("no label")

    quiet = RewardLogger(BaseGrader.from_function("a", abstains))
    assert await quiet.grade(samples(4)) == [None] * 4
    off = RewardLogger(
        BaseGrader.from_function("t", typo), failure=FailurePolicy(max_error_rate=None)
    )
    assert await off.grade(samples(4)) == [None] * 4


async def test_record_checks_grades_made_elsewhere():
    grader = BaseGrader.from_function("g", typo)
    reward_logger = RewardLogger(grader, failure=FailurePolicy(max_error_rate=0.5, error_window=4))
    ok = await BaseGrader.from_function("g", lambda s: 1.0).grade(samples(1)[0])
    reward_logger.record(grader, samples(2), [ok, ok])  # window not full: 0 of 2 failed
    with pytest.raises(GraderFailingError, match="RuntimeError: down"):
        reward_logger.record(grader, samples(2), [RuntimeError("down"), RuntimeError("again")])
    # None (no grade, cause unknown) is no failure.
    plain = RewardLogger(grader)
    plain.record(grader, samples(2), [None, None])


async def test_reward_logger_grade_takes_a_timeout():
    async def hangs(sample: StringThread) -> float:
        await asyncio.Event().wait()
        return 1.0

    reward_logger = RewardLogger(
        BaseGrader.from_function("h", hangs), failure=FailurePolicy(max_error_rate=None)
    )
    grades = await asyncio.wait_for(reward_logger.grade(samples(2), timeout=0.1), GUARD)
    assert grades == [None, None]
    logs = reward_logger.step(1)
    assert logs["rewards/h/score/timeout_count"] == 2
    assert logs["rewards/h/score/error_count"] == 2


def test_reward_logger_bounds_undrained_graders_only_where_unbounded(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
):
    monkeypatch.setattr(_logging_core, "UNDRAINED_RECORDS", 30)
    grader = BaseGrader.from_function("g", lambda s: 1.0)
    own = BaseGrader.from_function("own", lambda s: 1.0)
    own.max_log_records = 1000
    reward_logger = RewardLogger([grader, own])
    assert (grader.max_log_records, own.max_log_records) == (30, 1000)
    with caplog.at_level(logging.WARNING, logger="gradewire"):
        for _ in range(5):
            asyncio.run(reward_logger.grade(samples(10), grader="g"))
    assert reward_logger.step(1)["rewards/g/score/count"] == 50
    (warning,) = [r.getMessage() for r in caplog.records if "nothing has drained" in r.getMessage()]
    assert "Call step() at each training step" in warning


def test_grader_failing_error_pickles():
    error = GraderFailingError(
        "m", grader_key="k", failed=2, samples=3, first_error=KeyError("x"), first_traceback="tb"
    )
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.grader_key, copy.failed, copy.samples, copy.first_traceback) == ("k", 2, 3, "tb")
    assert isinstance(copy.first_error, KeyError)
    assert str(copy) == "m"


def call_openrlhf(reward_func: Any, n: int) -> list[Any]:
    outcomes: list[Any] = []
    for i in range(n):
        try:
            outcomes.append(reward_func([f"q{i} a"], [f"q{i} "], ["label"])["rewards"])
        except Exception as exc:
            outcomes.append(exc)
    return outcomes


def test_openrlhf_fails_fast_once_a_window_of_samples_failed(caplog: pytest.LogCaptureFixture):
    reward_func = openrlhf_reward_func(
        BaseGrader.from_function("g", typo),
        failure=FailurePolicy(failure_value=0.0, error_window=8),
    )
    with caplog.at_level(logging.ERROR, logger="gradewire"):
        outcomes = call_openrlhf(reward_func, 9)
    assert outcomes[:7] == [[0.0]] * 7  # failure_value, while the window fills
    assert all(isinstance(o, GraderFailingError) for o in outcomes[7:])
    assert isinstance(outcomes[7].__cause__, KeyError)
    assert any("openrlhf_reward_func(...)" in r.getMessage() for r in caplog.records)
    tolerant = openrlhf_reward_func(
        BaseGrader.from_function("g", typo),
        failure=FailurePolicy(failure_value=0.0, max_error_rate=None),
    )
    assert call_openrlhf(tolerant, 70) == [[0.0]] * 70


def test_openrlhf_without_failure_reward_still_raises_per_sample():
    reward_func = openrlhf_reward_func(
        BaseGrader.from_function("g", typo), failure=FailurePolicy(error_window=None)
    )
    (outcome,) = call_openrlhf(reward_func, 1)
    # With a window of one call, one failed sample is the whole window.
    assert isinstance(outcome, GraderFailingError)
    default = openrlhf_reward_func(BaseGrader.from_function("g", typo))
    (first,) = call_openrlhf(default, 1)
    assert isinstance(first, GradingError)
    assert not isinstance(first, GraderFailingError)


def test_openrlhf_bounds_the_grader_nothing_drains():
    grader = BaseGrader.from_function("g", lambda s: 1.0)
    openrlhf_reward_func(grader)
    assert grader.max_log_records == _logging_core.UNDRAINED_RECORDS
    with pytest.raises(InvalidInputError, match="timeout"):
        openrlhf_reward_func(grader, timeout=-1)
