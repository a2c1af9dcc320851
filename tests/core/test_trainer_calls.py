"""A grader called as a trainer calls a reward function says which adapter to wrap it in."""

from __future__ import annotations

import asyncio

import pytest

from gradewire import BaseGrader, InvalidTypeError, StringThread

GRADER = BaseGrader.from_function("correct", lambda s: 1.0)


def test_trls_call_names_trl_reward():
    call = GRADER(
        prompts=["p"], completions=["c"], completion_ids=[[1]], trainer_state=None, answer=["4"]
    )
    with pytest.raises(InvalidTypeError, match=r"reward_funcs=\[trl_reward\(grader\)\]") as caught:
        asyncio.run(call)
    assert isinstance(caught.value, TypeError)
    assert "'correct' was called as a TRL reward function" in str(caught.value)


def test_verls_call_names_verl_compute_score():
    call = GRADER(data_source="math", solution_str="4", ground_truth="4", extra_info={})
    with pytest.raises(InvalidTypeError, match=r"compute_score = verl_compute_score\(grader\)"):
        asyncio.run(call)


def test_openrlhfs_call_names_openrlhf_reward_func():
    call = GRADER(["q 4"], ["q "], ["4"])  # type: ignore[call-arg]
    with pytest.raises(InvalidTypeError, match=r"openrlhf_reward_func\(grader"):
        asyncio.run(call)


def test_other_wrong_calls_say_how_a_grader_is_called():
    with pytest.raises(InvalidTypeError, match="unexpected keyword argument"):
        asyncio.run(GRADER(sample=None, colour="red"))  # type: ignore[call-arg]
    with pytest.raises(InvalidTypeError, match="takes one StringThread"):
        asyncio.run(GRADER())


def test_a_plain_call_still_grades_and_takes_the_sample_by_name():
    thread = StringThread([("user", "q"), ("assistant", "a")])
    assert asyncio.run(GRADER(thread)).value == 1.0  # type: ignore[union-attr]
    assert asyncio.run(GRADER(sample=thread)).value == 1.0  # type: ignore[union-attr]
