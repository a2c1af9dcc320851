"""Adaptive Harmony's `BaseGrader`, as recipes use it: grade, log, aggregate, clear.

Runs against adaptive-harmony and gradewire alike (see `compat_targets`). Where gradewire
adds to what comes back (abstention and error counts, statistics of every numeric key),
the tests check Adaptive Harmony's keys and values are all there and the same.
"""

from __future__ import annotations

import math
import statistics
from typing import Any, TypedDict

import pytest
from ah_target import BaseGrader, Grade, IgnoreGradeException, StringThread, Table
from compat_targets import REAL


def sample(completion: str = "a", **metadata: Any) -> StringThread:
    return StringThread([("user", "q"), ("assistant", completion)], metadata=metadata)


def same_numbers(logs: dict[str, Any], expected: dict[str, float]) -> None:
    """Every expected key is in ``logs`` with that value (floats within 1e-12)."""
    for key, value in expected.items():
        assert logs[key] == pytest.approx(value, rel=1e-12, abs=1e-12), key


class Record(TypedDict):
    score: float
    words: int


class Words(BaseGrader[Record]):
    """A grader written against the generic base, as Adaptive Harmony's judges are."""

    async def grade(self, sample: StringThread) -> Grade:
        words = len(sample.last_content().split())
        score = 1.0 if words <= 3 else 0.0
        self.add_log({"score": score, "words": words})
        return Grade(value=score, grader_key=self.grader_key, reasoning=f"{words} words")


async def test_a_subclass_of_the_generic_base_grades_and_logs():
    grader = Words("brevity")
    assert grader.grader_key == "brevity"
    grades = [
        await grader.grade(sample(text)) for text in ["one", "two words", "far too many words"]
    ]
    assert [g.value for g in grades] == [1.0, 1.0, 0.0]
    assert grades[2].reasoning == "4 words"
    assert grades[0].grader_key == "brevity"
    logs = grader.get_logs()
    same_numbers(
        logs,
        {
            "score/mean": 2 / 3,
            "score/std": statistics.stdev([1.0, 1.0, 0.0]),
            "score/min": 0.0,
            "score/max": 1.0,
            "score/count": 3,
        },
    )
    assert grader._logs == [
        {"score": 1.0, "words": 1},
        {"score": 1.0, "words": 2},
        {"score": 0.0, "words": 4},
    ]


async def test_clear_empties_the_buffer_and_nothing_logged_gives_no_logs():
    grader = Words("brevity")
    assert grader.get_logs() == {}
    await grader.grade(sample("x"))
    assert grader.get_logs(clear=True)["score/count"] == 1
    assert grader._logs == []
    assert grader.get_logs() == {}
    await grader.grade(sample("x y z w"))
    grader.clear_logs()
    assert grader.get_logs() == {}


async def test_one_score_has_zero_std():
    grader = Words("brevity")
    await grader.grade(sample("x"))
    same_numbers(grader.get_logs(), {"score/std": 0.0, "score/count": 1})


async def test_get_logs_takes_log_all_samples():
    grader = Words("brevity")
    await grader.grade(sample("x"))
    assert grader.get_logs(clear=False, log_all_samples=True)["score/mean"] == 1.0
    assert grader.get_logs(log_all_samples=False)["score/mean"] == 1.0


async def test_from_function_with_adaptive_harmonys_keyword_names():
    async def exact(thread: StringThread) -> float:
        return 1.0 if thread.last_content() == thread.metadata["answer"] else 0.0

    grader = BaseGrader.from_function(grader_key="exact", async_fn=exact)
    grades = [await grader.grade(sample(text, answer="4")) for text in ["4", "5", "4"]]
    assert [(g.value, g.grader_key, g.reasoning) for g in grades] == [
        (1.0, "exact", None),
        (0.0, "exact", None),
        (1.0, "exact", None),
    ]
    assert type(grades[0].value) is float
    same_numbers(grader.get_logs(clear=True), {"score/mean": 2 / 3, "score/count": 3})
    positional = BaseGrader.from_function("exact", exact)
    assert (await positional.grade(sample("4", answer="4"))).value == 1.0


async def test_from_function_logs_each_score_in_self_logs():
    async def half(thread: StringThread) -> float:
        return 0.5

    grader = BaseGrader.from_function("half", half)
    for _ in range(3):
        await grader.grade(sample())
    assert grader._logs == [{"score": 0.5}] * 3
    grader.clear_logs()
    assert grader._logs == []


async def test_score_float_value_is_the_grade_value():
    async def three_quarters(thread: StringThread) -> float:
        return 0.75

    grader = BaseGrader.from_function("q", three_quarters)
    value = await grader.score_float_value(sample())
    assert value == 0.75
    assert type(value) is float
    assert grader.get_logs()["score/count"] == 1


async def test_score_float_value_raises_what_grade_raises():
    class Picky(BaseGrader):
        async def grade(self, sample: StringThread) -> Grade:
            if sample.last_content() == "skip":
                raise IgnoreGradeException("not applicable")
            raise KeyError("answer")

    grader = Picky("picky")
    with pytest.raises(IgnoreGradeException, match="not applicable"):
        await grader.score_float_value(sample("skip"))
    with pytest.raises(KeyError, match="answer"):
        await grader.score_float_value(sample("boom"))


def test_ignore_grade_exception_messages():
    default = IgnoreGradeException()
    assert default.message.startswith("Grade should be ignored.")
    assert str(default) == default.message
    assert "Error details" not in default.message
    detailed = IgnoreGradeException("the criterion does not apply")
    assert detailed.message == f"{default.message} Error details: the criterion does not apply"
    assert str(detailed) == detailed.message
    assert isinstance(detailed, Exception)
    assert IgnoreGradeException("").message == default.message


class CustomLogs(BaseGrader):
    """A get_logs override that reads self._logs, as the docs show."""

    async def grade(self, sample: StringThread) -> Grade:
        valid = sample.last_content().startswith("{")
        score = 1.0 if valid else -1.0
        self.add_log({"score": score, "valid": valid, "completion": sample.last_content()})
        return Grade(value=score, grader_key=self.grader_key)

    def get_logs(self, clear: bool = False, log_all_samples: bool = False) -> dict[str, Any]:
        logs = super().get_logs(clear=False)
        bad = [log for log in self._logs if not log["valid"]]
        logs["score/malformed_rate"] = len(bad) / len(self._logs) if self._logs else 0.0
        if bad:
            logs["score/malformed"] = Table().add_column(
                "Completion", [b["completion"] for b in bad]
            )
        if clear:
            self.clear_logs()
        return logs


async def test_a_get_logs_override_reads_the_records():
    grader = CustomLogs("format")
    for text in ['{"a": 1}', "oops", "{}", "nope"]:
        await grader.grade(sample(text))
    logs = grader.get_logs(clear=True)
    same_numbers(logs, {"score/mean": 0.0, "score/count": 4, "score/malformed_rate": 0.5})
    assert logs["score/malformed"].headers == ["Completion"]
    assert logs["score/malformed"].rows == [["oops"], ["nope"]]
    assert grader.get_logs() == {"score/malformed_rate": 0.0}


async def test_get_sample_tables_with_adaptive_harmonys_keyword_names():
    grader = Words("w")
    successful = [
        {"prompt": "p1", "reasoning": "r1", "score": 1.0},
        {"prompt": "p2", "reasoning": "r2", "score": 0},
    ]
    failed = [{"prompt": "p3", "error": "judge timed out"}]
    tables = grader.get_sample_tables(successful_samples=successful, failed_samples=failed)
    assert set(tables) == {
        "score/scored_samples",
        "score/unscored_samples",
        "score/scored_samples_count",
        "score/unscored_samples_count",
    }
    scored, unscored = tables["score/scored_samples"], tables["score/unscored_samples"]
    assert scored.headers == ["Prompt", "Reasoning", "Score"]
    assert scored.rows == [["p1", "r1", 1.0], ["p2", "r2", 0.0]]
    assert unscored.headers == ["Prompt", "Error"]
    assert unscored.rows == [["p3", "judge timed out"]]
    assert (tables["score/scored_samples_count"], tables["score/unscored_samples_count"]) == (2, 1)
    only_scored = grader.get_sample_tables(successful_samples=successful)
    assert "score/unscored_samples" not in only_scored
    assert only_scored["score/unscored_samples_count"] == 0
    assert grader.get_sample_tables(successful, None)["score/scored_samples_count"] == 2


def test_grade_fields():
    grade = Grade(value=1, grader_key="k")
    assert (grade.value, grade.grader_key, grade.reasoning) == (1.0, "k", None)
    assert type(grade.value) is float
    reasoned = Grade(0.5, "k", "half right")
    assert (reasoned.value, reasoned.reasoning) == (0.5, "half right")


def test_grade_value_precision():
    # Adaptive Harmony stores grade values as 32-bit floats; gradewire keeps Python floats.
    value = Grade(value=0.1, grader_key="k").value
    if REAL:
        assert value != 0.1
        assert value == pytest.approx(0.1, rel=1e-7)
    else:
        assert value == 0.1
    assert math.isfinite(value)
