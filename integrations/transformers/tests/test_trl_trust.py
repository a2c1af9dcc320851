"""TRL rewards never train on nothing: fail fast, a clear message for a bare grader, timeouts,
concurrency of sync graders and a bounded memory when nothing drains the logs.

The GRPO runs use the tiny CPU model of ``trl_support.py`` with no tracker.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path
from typing import Any

import pytest
from trl.trainer.utils import get_callable_name

from gradewire import (
    BaseGrader,
    GraderFailingError,
    IgnoreGradeException,
    InvalidInputError,
    InvalidTypeError,
    StringThread,
)
from gradewire.core import _logging_core
from gradewire.train import FailurePolicy
from gradewire_transformers import GradewireCallback, trl_reward
from trl_support import tiny_grpo

GUARD = 60.0


def typo(sample: StringThread) -> float:
    """Reads a column that is not there: every call raises KeyError('anwser')."""
    return float(sample.metadata["anwser"] in (sample.completion() or ""))


def grpo(tmp_path: Path, rewards: list[Any], callbacks: list[Any] | None = None) -> Any:
    return tiny_grpo(tmp_path, rewards, callbacks or (), completion_length=4)


def test_grpo_stops_at_the_first_all_error_step_with_the_graders_error(tmp_path):
    reward = trl_reward(BaseGrader.from_function("correct", typo))
    trainer = grpo(tmp_path, [reward])
    with pytest.raises(GraderFailingError) as caught:
        trainer.train()
    error = caught.value
    assert trainer.state.global_step == 0  # not one optimiser step on missing rewards
    assert isinstance(error.__cause__, KeyError)
    assert error.__cause__.args == ("anwser",)
    assert "KeyError: 'anwser'" in str(error)
    assert "in typo" in str(error)  # the grader's own traceback, in the message
    assert "failure=FailurePolicy(max_error_rate=None) to trl_reward(...)" in str(error)
    assert (error.grader_key, error.failed, error.samples) == ("correct", 4, 4)
    assert "KeyError" in error.first_traceback


def test_the_callback_stops_the_run_too_and_both_bounds_can_be_turned_off(tmp_path):
    grader = BaseGrader.from_function("correct", typo)
    reward = trl_reward(grader, failure=FailurePolicy(max_error_rate=None))
    callback = GradewireCallback(reward, sinks=[])
    with pytest.raises(GraderFailingError, match=r"GradewireCallback\(\.\.\.\)"):
        grpo(tmp_path / "a", [reward], [callback]).train()
    quiet = trl_reward(
        BaseGrader.from_function("correct", typo), failure=FailurePolicy(max_error_rate=None)
    )
    allowed = GradewireCallback(quiet, failure=FailurePolicy(max_error_rate=None), sinks=[])
    trainer = grpo(tmp_path / "b", [quiet], [allowed])
    trainer.train()
    assert trainer.state.global_step == 3  # told to, it trains on regardless
    assert quiet.grader.get_logs() == {}  # every window drained by the callback


def test_a_grader_passed_to_grpo_without_trl_reward_says_to_wrap_it(tmp_path):
    grader = BaseGrader.from_function("correct", lambda s: 1.0)
    assert get_callable_name(grader) == "FunctionGrader"  # the name TRL gives it
    trainer = grpo(tmp_path, [grader])
    with pytest.raises(InvalidTypeError, match=r"reward_funcs=\[trl_reward\(grader\)\]") as caught:
        trainer.train()
    assert isinstance(caught.value, TypeError)  # still the TypeError TRL users expect
    assert "'correct' was called as a TRL reward function" in str(caught.value)


def call(reward: Any, prompts: list[str], completions: list[str], **columns: Any) -> Any:
    return asyncio.run(
        asyncio.wait_for(
            reward(
                prompts=prompts,
                completions=completions,
                completion_ids=[[0]] * len(prompts),
                trainer_state=None,
                log_extra=lambda column, values: None,
                log_metric=lambda name, value: None,
                **columns,
            ),
            GUARD,
        )
    )


def test_abstentions_are_not_failures():
    def never_applies(sample: StringThread) -> float:
        raise IgnoreGradeException("not a math question")

    reward = trl_reward(BaseGrader.from_function("math", never_applies))
    assert call(reward, ["p"] * 4, ["c"] * 4) == [None] * 4
    assert reward.grader.get_logs()["score/abstained_count"] == 4


def test_a_partial_failure_passes_the_default_and_a_window_catches_a_rate():
    def fails_three_of_four(sample: StringThread) -> float:
        if sample.completion() != "ok":
            raise RuntimeError("judge down")
        return 1.0

    default = trl_reward(BaseGrader.from_function("j", fails_three_of_four))
    assert call(default, ["p"] * 4, ["ok", "x", "x", "x"]) == [1.0, None, None, None]
    windowed = trl_reward(
        BaseGrader.from_function("j", fails_three_of_four),
        failure=FailurePolicy(max_error_rate=0.5, error_window=8),
    )
    # Before the window is full the samples so far are checked: 1 of 4 is under 0.5.
    call(windowed, ["p"] * 4, ["ok", "ok", "ok", "x"])
    with pytest.raises(GraderFailingError, match=r"4 of 8 samples of the last 8") as caught:
        call(windowed, ["p"] * 4, ["ok", "x", "x", "x"])
    assert isinstance(caught.value.__cause__, RuntimeError)
    early = trl_reward(
        BaseGrader.from_function("j", fails_three_of_four),
        failure=FailurePolicy(max_error_rate=0.5, error_window=8),
    )
    with pytest.raises(GraderFailingError, match=r"3 of 4 samples of a batch"):
        call(early, ["p"] * 4, ["ok", "x", "x", "x"])


@pytest.mark.parametrize(
    "options", [{"max_error_rate": 0}, {"max_error_rate": 1.5}, {"error_window": 0}]
)
def test_fail_fast_settings_are_checked_when_built(options: dict[str, Any]):
    with pytest.raises(InvalidInputError):
        trl_reward(BaseGrader.from_function("k", lambda s: 1.0), failure=FailurePolicy(**options))


def test_a_timeout_gives_no_reward_and_is_counted():
    async def hangs(sample: StringThread) -> float:
        if sample.completion() == "stuck":
            await asyncio.Event().wait()
        return 1.0

    reward = trl_reward(BaseGrader.from_function("judge", hangs), timeout=0.2)
    assert call(reward, ["p"] * 3, ["a", "stuck", "b"]) == [1.0, None, 1.0]
    logs = reward.grader.get_logs()
    assert (logs["score/error_count"], logs["score/timeout_count"]) == (1, 1)
    with pytest.raises(InvalidInputError, match="timeout"):
        trl_reward(reward.grader, timeout=0)


def test_sync_graders_run_concurrently_in_a_trl_batch():
    barrier = threading.Barrier(16, timeout=GUARD)

    def meets(sample: StringThread) -> float:
        barrier.wait()  # opens only with the whole batch inside at once
        return 1.0

    reward = trl_reward(BaseGrader.from_function("meets", meets))
    assert call(reward, ["p"] * 16, ["c"] * 16) == [1.0] * 16


def test_without_the_callback_the_grader_stays_bounded_and_says_how_to_drain(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
):
    monkeypatch.setattr(_logging_core, "UNDRAINED_RECORDS", 40)
    grader = BaseGrader.from_function("len", lambda s: float(len(s.completion() or "")))
    reward = trl_reward(grader)
    assert grader.max_log_records == 40
    with caplog.at_level(logging.WARNING, logger="gradewire"):
        for _ in range(10):
            call(reward, ["p"] * 10, ["abc"] * 10)
    assert len(grader._logs) <= 40
    assert grader.get_logs()["score/count"] == 100  # the figures still cover every sample
    warnings = [r.getMessage() for r in caplog.records if "nothing has drained" in r.getMessage()]
    assert len(warnings) == 1
    assert "GradewireCallback" in warnings[0]
    assert "get_logs(clear=True)" in warnings[0]


def test_a_bound_of_the_users_own_is_kept_and_the_callback_never_warns(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
):
    monkeypatch.setattr(_logging_core, "UNDRAINED_RECORDS", 40)
    own = BaseGrader.from_function("own", lambda s: 1.0)
    own.max_log_records = 500
    trl_reward(own)
    assert own.max_log_records == 500
    grader = BaseGrader.from_function("drained", lambda s: 1.0)
    reward = trl_reward(grader)
    callback = GradewireCallback(reward, sinks=[])
    with caplog.at_level(logging.WARNING, logger="gradewire"):
        for step in range(10):
            call(reward, ["p"] * 10, ["abc"] * 10)
            callback.logs_at(step, main=True)  # a logging step drains the window
    assert not [r for r in caplog.records if "nothing has drained" in r.getMessage()]
