"""Graders named by ``custom`` specs in the factory and reward server tests."""

from __future__ import annotations

from gradewire import BaseGrader, Grade, StringThread

NOT_CALLABLE = 42


def length_score(sample: StringThread) -> float:
    """1.0 per 10 characters of completion, capped at 1."""
    return min(len(sample.completion() or "") / 10, 1.0)


def label_match(sample: StringThread) -> float | None:
    """1.0 when the completion equals metadata["label"]; abstains without a label."""
    label = sample.metadata.get("label")
    if label is None:
        return None
    return 1.0 if (sample.completion() or "").strip() == str(label) else 0.0


def explode_on_boom(sample: StringThread) -> float:
    """Fails on completions containing 'boom', else 1.0."""
    if "boom" in (sample.completion() or ""):
        raise ValueError("boom in the completion")
    return 1.0


class KeywordGrader(BaseGrader):
    """1.0 when the completion contains ``word``."""

    def __init__(self, grader_key: str, word: str = "yes", *, sample_tables: bool = False) -> None:
        super().__init__(grader_key, sample_tables=sample_tables)
        self.word = word

    async def grade(self, sample: StringThread) -> Grade:
        value = 1.0 if self.word in (sample.completion() or "") else 0.0
        self.add_log({"score": value})
        return Grade(value, self.grader_key, f"looked for {self.word!r}")


def make_keyword(key: str, word: str) -> KeywordGrader:
    """A factory function."""
    return KeywordGrader(key, word)


def make_wrong_key(key: str) -> KeywordGrader:
    """A factory that ignores the key it is given."""
    return KeywordGrader("other-key")


def not_a_factory(key: str) -> float:
    """Returns a number, not a grader."""
    return 1.5


SHARED = KeywordGrader("shared", "ok")
