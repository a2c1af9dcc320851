"""FailurePolicy: one object, one name per knob, the same defaults in every adapter."""

from __future__ import annotations

import dataclasses
import inspect
import math

import pytest

from gradewire import (
    BaseGrader,
    GraderFailingError,
    InvalidInputError,
    InvalidTypeError,
    RewardLogger,
    StringThread,
    openrlhf_reward_func,
)
from gradewire.train import FailurePolicy


def typo(sample: StringThread) -> float:
    return float(sample.metadata["anwser"] == sample.completion())


def samples(n: int) -> list[StringThread]:
    return [StringThread([("user", f"q{i}"), ("assistant", "a")]) for i in range(n)]


def test_defaults_and_each_field_checked_when_made():
    policy = FailurePolicy()
    assert (policy.max_error_rate, policy.error_window, policy.failure_value) == (1.0, 64, None)
    assert FailurePolicy(failure_value=1).failure_value == 1.0
    assert isinstance(FailurePolicy(failure_value=1).failure_value, float)
    assert math.isnan(FailurePolicy(failure_value=math.nan).failure_value)  # "missing"
    for bad, error in [
        ({"max_error_rate": 0}, InvalidInputError),
        ({"max_error_rate": 1.5}, InvalidInputError),
        ({"max_error_rate": "1"}, InvalidTypeError),
        ({"error_window": 0}, InvalidInputError),
        ({"error_window": True}, InvalidTypeError),
        ({"failure_value": math.inf}, InvalidInputError),
        ({"failure_value": False}, InvalidTypeError),
    ]:
        with pytest.raises(error, match=next(iter(bad))):
            FailurePolicy(**bad)
    with pytest.raises(dataclasses.FrozenInstanceError):
        policy.error_window = 8  # type: ignore[misc]


def test_every_core_adapter_takes_one_policy_and_no_old_knob_in_its_signature():
    for adapter in (RewardLogger.__init__, openrlhf_reward_func):
        parameters = inspect.signature(adapter).parameters
        assert "failure" in parameters
        assert not {"failure_reward", "max_error_rate", "error_window"} & set(parameters)


def test_the_old_keywords_warn_naming_the_new_spelling_and_still_work():
    grader = BaseGrader.from_function("g", typo)
    with pytest.warns(DeprecationWarning, match=r"deprecated: pass failure=FailurePolicy\(") as w:
        reward_func = openrlhf_reward_func(grader, failure_reward=-1.0, error_window=2)
    assert [str(x.message).split(" is ")[0] for x in w] == [
        "openrlhf_reward_func(failure_reward=...)",
        "openrlhf_reward_func(error_window=...)",
    ]
    assert "FailurePolicy(failure_value=...)" in str(w[0].message)
    assert all(x.filename == __file__ for x in w)  # the warnings point at the caller's line
    assert reward_func.failure == FailurePolicy(failure_value=-1.0, error_window=2)
    with pytest.warns(DeprecationWarning, match=r"RewardLogger\(max_error_rate=\.\.\.\)"):
        logger = RewardLogger(BaseGrader.from_function("h", typo), max_error_rate=None)
    assert logger.fail_fast.max_error_rate is None


def test_a_policy_and_an_old_keyword_together_or_an_unknown_keyword_are_refused():
    grader = BaseGrader.from_function("g", typo)
    with pytest.raises(InvalidInputError, match="put every setting in the FailurePolicy"):
        openrlhf_reward_func(grader, failure=FailurePolicy(), error_window=3)
    with pytest.raises(InvalidTypeError, match="unexpected keyword argument 'failure_rewrd'"):
        openrlhf_reward_func(grader, failure_rewrd=0.0)
    with pytest.raises(InvalidTypeError, match=r"takes a gradewire\.train\.FailurePolicy"):
        RewardLogger(grader, failure={"max_error_rate": None})  # type: ignore[arg-type]


def test_the_window_default_is_the_same_and_a_single_sample_waits_for_a_full_window():
    # One sample a call (OpenRLHF, veRL): no stop until 64 samples were seen...
    reward_func = openrlhf_reward_func(
        BaseGrader.from_function("g", typo), failure=FailurePolicy(failure_value=0.0)
    )
    assert (
        reward_func.fail_fast.window
        == RewardLogger(BaseGrader.from_function("h", typo)).fail_fast.window
        == 64
    )
    for _ in range(63):
        assert reward_func(["qa"], ["q"], [None])["rewards"] == [0.0]
    with pytest.raises(GraderFailingError, match="64 of 64 samples of the last 64"):
        reward_func(["qa"], ["q"], [None])


async def test_a_batch_that_all_failed_stops_at_once_under_the_same_window():
    logger = RewardLogger(BaseGrader.from_function("g", typo))
    with pytest.raises(GraderFailingError, match="8 of 8 samples of a batch"):
        await logger.grade(samples(8))
