"""grade_many refuses a batch that holds something other than threads, before grading any."""

from __future__ import annotations

import pytest

from gradewire import BaseGrader, InvalidTypeError, StringThread, run_sync

_THREAD = StringThread([("user", "What is 2 + 2?"), ("assistant", "4")])


@pytest.mark.parametrize(
    ("samples", "said"),
    [
        ([{"messages": [{"role": "user", "content": "hi"}]}], r"sample 0 is a dict.*from_messages"),
        (["What is 2 + 2?"], r"sample 0 is a str; build it with StringThread\(\["),
        ([_THREAD, None], r"sample 1 is a NoneType"),
        ("What is 2 + 2?", r"not a str"),
        ({"messages": []}, r"not a dict"),
        (_THREAD, r"not one StringThread: pass \[sample\]"),
    ],
)
def test_what_is_not_a_thread_is_refused_up_front(samples: object, said: str) -> None:
    seen: list[object] = []

    def score(sample: object) -> float:
        seen.append(sample)
        return float(len(str(sample)))  # would score a str happily

    grader = BaseGrader.from_function("length", score)
    with pytest.raises(InvalidTypeError, match=said):
        run_sync(grader.grade_many(samples))  # type: ignore[arg-type]
    assert seen == []
    logs = grader.get_logs()
    assert logs.get("score/count", 0) == 0
    assert logs.get("score/error_count", 0) == 0


def test_threads_from_any_iterable_are_still_graded() -> None:
    grader = BaseGrader.from_function("length", lambda s: float(len(s.completion() or "")))
    grades = run_sync(grader.grade_many(t for t in [_THREAD, _THREAD]))
    assert [g.value if g else None for g in grades] == [1.0, 1.0]
