"""trl_reward called exactly as TRL 1.16's GRPOTrainer calls a reward function."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest
from trl.trainer.utils import get_callable_name, is_async_callable

from gradewire import BaseGrader, Grade, InvalidTypeError, RewardLogger, StringThread
from gradewire.train import FailurePolicy
from gradewire_transformers import GradewireCallback, trl_reward


def trl_kwargs(**columns: Any) -> dict[str, Any]:
    extra: dict[str, list[Any]] = {}

    def log_extra(column: str, values: list[Any]) -> None:
        extra.setdefault(column, []).extend(values)

    return {
        **columns,
        "trainer_state": object(),
        "log_extra": log_extra,
        "log_metric": lambda name, value: None,
        "_extra": extra,
    }


def call(reward: Any, prompts: list[Any], completions: list[Any], **columns: Any) -> Any:
    kwargs = trl_kwargs(**columns)
    extra = kwargs.pop("_extra")
    ids = [[0] * (len(str(c)) // 2 + 1) for c in completions]
    values = asyncio.run(
        reward(prompts=prompts, completions=completions, completion_ids=ids, **kwargs)
    )
    return values, extra


def test_trl_sees_an_async_function_named_by_the_grader_key():
    reward = trl_reward(BaseGrader.from_function("exact", lambda s: 1.0))
    assert is_async_callable(reward)
    assert get_callable_name(reward) == "exact"
    assert get_callable_name(trl_reward(reward.grader, name="other")) == "other"


def test_standard_rows_get_their_columns_as_metadata_and_none_where_no_grade():
    seen: list[StringThread] = []

    def check(sample: StringThread) -> float | None:
        seen.append(sample)
        if sample.metadata["answer"] == "skip":
            return None
        if sample.metadata["answer"] == "boom":
            raise RuntimeError("broken")
        return float(sample.metadata["answer"] in (sample.completion() or ""))

    grader = BaseGrader.from_function("exact", check)
    values, extra = call(
        trl_reward(grader),
        ["1+1?", "2+2?", "3+3?", "4+4?"],
        ["2", "5", "6", "8"],
        answer=["2", "4", "skip", "boom"],
        documents=[["d1"], ["d2"], [], []],
    )
    assert values == [1.0, 0.0, None, None]
    # Sync graders run concurrently in worker threads: the calls come in any order.
    by_prompt = {s.turns[0].content: s for s in seen}
    assert [by_prompt[p].metadata["documents"] for p in ["1+1?", "2+2?", "3+3?", "4+4?"]] == [
        ["d1"],
        ["d2"],
        [],
        [],
    ]
    assert by_prompt["1+1?"].completion() == "2"
    assert "trainer_state" not in by_prompt["1+1?"].metadata
    logs = grader.get_logs()
    assert logs["score/abstained_count"] == 1
    assert logs["score/error_count"] == 1
    assert extra == {}  # no grade had reasoning


def test_conversational_rows_become_message_threads():
    seen: list[StringThread] = []

    def check(sample: StringThread) -> float:
        seen.append(sample)
        return 0.5

    prompt = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi?"}]
    values, _ = call(
        trl_reward(BaseGrader.from_function("chat", check)),
        [prompt],
        [[{"role": "assistant", "content": "Hello."}]],
    )
    assert values == [0.5]
    assert [(t.role, t.content) for t in seen[0].turns] == [
        ("system", "Be brief."),
        ("user", "Hi?"),
        ("assistant", "Hello."),
    ]


def test_failure_value_is_only_used_when_asked_for():
    grader = BaseGrader.from_function("maybe", lambda s: None)
    values, _ = call(trl_reward(grader, failure=FailurePolicy(failure_value=-1.0)), ["p"], ["c"])
    assert values == [-1.0]
    with pytest.warns(DeprecationWarning, match=r"trl_reward\(failure_value=\.\.\.\) is dep"):
        old = trl_reward(grader, failure_value=-1.0)
    assert old.failure == FailurePolicy(failure_value=-1.0)
    with pytest.warns(DeprecationWarning, match=r"GradewireCallback\(error_window=\.\.\.\)"):
        callback = GradewireCallback(old, error_window=8, sinks=[])
    assert callback.reward_logger.fail_fast.window == 8


def test_reasoning_goes_to_the_completions_table_from_then_on():
    def judged(sample: StringThread) -> Grade:
        return Grade(1.0, "judged", reasoning=f"saw {sample.completion()}")

    reward = trl_reward(BaseGrader.from_function("judged", judged))
    _, extra = call(reward, ["a", "b"], ["x", "y"])
    assert extra == {"judged/reasoning": ["saw x", "saw y"]}


def test_the_callback_records_lengths_from_completion_ids():
    grader = BaseGrader.from_function("value", lambda s: float(len(s.completion() or "")))
    reward = trl_reward(grader)
    callback = GradewireCallback(reward)
    assert isinstance(callback.reward_logger, RewardLogger)
    call(reward, ["p", "p", "q", "q"], ["a", "abcd", "abcdefgh", "ab"])
    logs = callback.logs_at(1, main=True)
    assert logs["rewards/value/score/count"] == 4
    # lengths are the token counts TRL passed: len(str(c)) // 2 + 1
    assert logs["rewards/value/score/length_corr"] == pytest.approx(
        np.corrcoef([1, 4, 8, 2], [1, 3, 5, 2])[0, 1]
    )
    assert logs["rewards/value/score/groups"] == 2
    with pytest.raises(InvalidTypeError, match="trl_reward"):
        GradewireCallback(object())  # type: ignore[arg-type]


def test_the_callbacks_gold_grades_its_share_once_and_an_alert_stops_training():
    from types import SimpleNamespace

    from gradewire import MemorySink
    from gradewire.train import RewardHealthError

    gold_calls: list[str] = []

    def gold_check(sample: StringThread) -> float:
        gold_calls.append(sample.completion() or "")
        return float("x" in (sample.completion() or ""))

    def broken(sample: StringThread) -> float:
        raise ValueError("judge down")

    length = trl_reward(BaseGrader.from_function("length", lambda s: 0.5))
    also = trl_reward(
        BaseGrader.from_function("also", broken), failure=FailurePolicy(max_error_rate=None)
    )
    sink = MemorySink()
    callback = GradewireCallback(
        length,
        also,
        sinks=sink,
        gold=BaseGrader.from_function("gold", gold_check),
        gold_fraction=1.0,
        failure=FailurePolicy(max_error_rate=None),
        on_alert="raise",
    )
    completions = [f"c{i}" + "x" * (i % 2) for i in range(40)]
    call(length, ["p"] * 40, completions)
    call(also, ["p"] * 40, completions)
    assert sorted(gold_calls) == sorted(completions)  # once, though two functions graded
    state = SimpleNamespace(global_step=3, is_world_process_zero=True)
    with pytest.raises(RewardHealthError, match="unscored"):
        callback.on_log(SimpleNamespace(report_to=[]), state, None, logs={})
    step, logs = sink.steps[-1]  # the step was logged before training stopped
    assert step == 3
    assert logs["rewards/health/alerts"] == 1
    [(title, _, tags)] = sink.alerts  # and the run was marked, on the callback's sink
    assert title == "reward health: unscored on rewards/also at step 3"
    assert tags["gradewire/health/alert_count"] == "1"
    assert logs["rewards/length/health/gold/pairs"] == 40
    assert logs["rewards/gold/score/mean"] == pytest.approx(0.5)
