"""Grader functions that grader files of the eval tests name (``eval_graders:...``)."""

from __future__ import annotations

import os

from gradewire import StringThread, numeric_match


def numeric_answer(sample: StringThread) -> float | None:
    """1.0 when the completion's number is the row's ``answer``; abstain without one."""
    if "answer" not in sample.metadata:
        return None
    return numeric_match(sample.completion() or "", sample.metadata["answer"])


def brevity(sample: StringThread) -> float:
    """1.0 for completions of at most 3 characters, less for longer ones."""
    return min(1.0, 3 / max(len(sample.completion() or ""), 1))


def counted(sample: StringThread) -> float:
    """1.0, after appending a line to the file ``GRADEWIRE_TEST_CALLS`` names (each call)."""
    with open(os.environ["GRADEWIRE_TEST_CALLS"], "a", encoding="utf-8") as calls:
        calls.write("graded\n")
    return 1.0


def echo_error(sample: StringThread) -> float:
    """Fails with the completion as its error text, as a judge's error can carry model output."""
    raise RuntimeError(f"model said: {sample.completion()}")
