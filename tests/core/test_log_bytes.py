"""max_log_bytes: a bound on the text a grader keeps for its tables."""

from __future__ import annotations

import sys

import pytest

from gradewire import BaseGrader, CombinedGrader, InvalidInputError, InvalidTypeError, StringThread
from gradewire.core._log_text import TEXT_VALUE_CHARS, kept_text


def sample(completion: str, prompt: str = "q") -> StringThread:
    return StringThread([("user", prompt), ("assistant", completion)])


def tables() -> BaseGrader:
    return BaseGrader.from_function("len", lambda s: len(s.completion() or ""), sample_tables=True)


def kept_bytes(grader: BaseGrader) -> int:
    return sum(sys.getsizeof(v) for r in grader._logs for v in r.values() if isinstance(v, str))


async def test_long_texts_are_cut_as_they_are_logged_not_only_when_rendered():
    grader = tables()
    grader.max_log_bytes = 1_000_000
    text = "h" * 6_000 + "m" * 4_000_000 + "t" * 6_000
    await grader.grade(sample(text))
    [record] = grader._logs
    kept = record["completion"]
    assert len(kept) <= TEXT_VALUE_CHARS
    assert kept.startswith("h" * 4_000)
    assert kept.endswith("t" * 4_000)
    head, _, rest = kept.partition("…[")
    count, _, tail = rest.partition(" chars cut]…")
    assert len(head) + int(count) + len(tail) == len(text)
    assert record["score"] == len(text)  # numbers are untouched
    table = grader.get_logs()["score/scored_samples"]
    assert table.column("Completion") == [kept]


def test_a_record_is_copied_only_when_something_is_cut():
    short = {"score": 1.0, "prompt": "q"}
    assert kept_text(short)[0] is short
    long = {"score": 1.0, "completion": "x" * (TEXT_VALUE_CHARS + 1)}
    cut, size = kept_text(long)
    assert cut is not long
    assert long["completion"] == "x" * (TEXT_VALUE_CHARS + 1)
    assert size == sys.getsizeof(cut["completion"])


async def test_kept_text_stays_under_the_bound_and_figures_stay_exact():
    grader = tables()
    bound = 200_000
    grader.max_log_bytes = bound
    completions = [f"{i:04d}" + "y" * 30_000 for i in range(200)]
    for completion in completions:
        await grader.grade(sample(completion))
        assert kept_bytes(grader) <= bound + 2 * sys.getsizeof("y" * TEXT_VALUE_CHARS)
    logs = grader.get_logs()
    assert logs["score/count"] == 200  # every sample, folded ones too
    assert logs["score/mean"] == pytest.approx(30_004)
    newest = logs["score/scored_samples"].column("Completion")
    assert 0 < len(newest) < 200
    assert newest[-1].startswith("0199")


async def test_unbounded_graders_keep_every_text_whole():
    grader = tables()
    text = "z" * (3 * TEXT_VALUE_CHARS)
    await grader.grade(sample(text))
    assert grader._logs[0]["completion"] == text
    assert grader.max_log_bytes is None


async def test_a_record_larger_than_the_bound_leaves_the_newest_one():
    grader = tables()
    grader.max_log_bytes = 4 * TEXT_VALUE_CHARS
    for i in range(5):
        await grader.grade(sample(str(i) * 100_000, prompt=str(i) * 50_000))
    assert len(grader._logs) >= 1
    assert grader._logs[-1]["prompt"].startswith("4")
    assert grader.get_logs()["score/count"] == 5


async def test_clearing_forgets_the_kept_size():
    grader = tables()
    grader.max_log_bytes = 100_000
    await grader.grade(sample("a" * 50_000))
    grader.clear_logs()
    for _ in range(3):
        await grader.grade(sample("b" * 5_000))
    assert len(grader._logs) == 3


def test_a_combined_grader_passes_its_bound_on():
    inner = tables()
    combined = CombinedGrader("both", [inner])
    combined.max_log_bytes = 500_000
    assert inner.max_log_bytes == 500_000


@pytest.mark.parametrize(
    ("value", "error"),
    [(1000, InvalidInputError), (True, InvalidTypeError), (1e6, InvalidTypeError)],
)
def test_a_bad_bound_is_refused(value: object, error: type[Exception]):
    with pytest.raises(error, match="max_log_bytes"):
        tables().max_log_bytes = value  # type: ignore[assignment]
