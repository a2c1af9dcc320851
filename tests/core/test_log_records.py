"""What ``self._logs`` holds when a function grader keeps its scores packed."""

from __future__ import annotations

import copy
import pickle

import pytest

from gradewire import BaseGrader, Grade, IgnoreGradeException, StringThread


def sample(text: str = "a") -> StringThread:
    return StringThread([("user", "q"), ("assistant", text)])


def scorer(text: str):
    if text == "skip":
        raise IgnoreGradeException("no answer")
    if text == "boom":
        raise RuntimeError("broken")
    if text == "why":
        return Grade(0.5, "any", "half")
    return float(len(text))


def graded() -> BaseGrader:
    return BaseGrader.from_function("f", lambda s: scorer(s.last_content()))


async def test_records_come_back_in_order_with_failures_between_them():
    grader = graded()
    for text in ["a", "bb", "skip", "ccc", "why", "boom", "dddd"]:
        await grader(sample(text))
    logs = grader._logs
    assert [set(r) for r in logs] == [
        {"score"},
        {"score"},
        {"abstained", "prompt", "completion"},
        {"score"},
        {"score", "reasoning"},
        {"error", "prompt", "completion"},
        {"score"},
    ]
    assert [r.get("score") for r in logs] == [1.0, 2.0, None, 3.0, 0.5, None, 4.0]
    assert grader._logs is logs  # one list from then on, appended to as before
    await grader(sample("eeeee"))
    assert logs[-1] == {"score": 5.0}
    stats = grader.get_logs()
    assert (stats["score/count"], stats["score/mean"]) == (6, 15.5 / 6)
    assert (stats["score/abstained_count"], stats["score/error_count"]) == (1, 1)


async def test_the_statistics_do_not_depend_on_whether_the_records_were_read():
    packed, read = graded(), graded()
    for text in ["a", "skip", "bbb", "why"]:
        await packed(sample(text))
        await read(sample(text))
        assert read._logs  # reading turns the records into dicts as they come
    assert packed.get_logs() == read.get_logs()
    assert packed.log_state() == read.log_state()


async def test_clearing_starts_packed_again_and_a_held_list_is_left_alone():
    grader = graded()
    await grader.grade(sample("ab"))
    held = grader._logs
    grader.clear_logs()
    await grader.grade(sample("abc"))
    assert held == [{"score": 2.0}]
    assert grader._logs == [{"score": 3.0}]


async def test_code_that_replaces_or_edits_the_records_is_trusted():
    grader = graded()
    for text in ["a", "bb"]:
        await grader.grade(sample(text))
    grader._logs = [{"score": 10.0}]
    assert grader.get_logs()["score/mean"] == 10.0
    await grader.grade(sample("abc"))  # appended to the assigned list
    assert grader._logs == [{"score": 10.0}, {"score": 3.0}]
    grader._logs.pop()
    assert grader.get_logs()["score/count"] == 1


async def test_a_bounded_grader_keeps_dicts_and_folds_them():
    grader = graded()
    grader.max_log_records = 10
    for _ in range(25):
        await grader.grade(sample("ab"))
    assert len(grader._logs) <= 10
    assert grader.get_logs()["score/count"] == 25


async def test_graders_with_packed_records_copy_and_pickle():
    grader = BaseGrader.from_function("f", len_score)
    for text in ["a", "bb"]:
        await grader.grade(sample(text))
    clone = pickle.loads(pickle.dumps(grader))
    await clone.grade(sample("ccc"))
    assert clone.get_logs()["score/count"] == 3
    assert grader.get_logs()["score/count"] == 2
    deep = copy.deepcopy(grader)
    await deep.grade(sample("dddd"))
    assert (deep.get_logs()["score/count"], grader.get_logs()["score/count"]) == (3, 2)


def len_score(thread: StringThread) -> float:
    return float(len(thread.last_content()))


@pytest.mark.parametrize("sample_tables", [False, True])
async def test_sample_tables_see_every_record(sample_tables):
    grader = BaseGrader.from_function("f", len_score, sample_tables=sample_tables)
    for text in ["a", "bb"]:
        await grader.grade(sample(text))
    logs = grader.get_logs()
    assert ("score/scored_samples" in logs) is sample_tables
    if sample_tables:
        assert logs["score/scored_samples"].rows == [["q", "a", "", 1.0], ["q", "bb", "", 2.0]]
