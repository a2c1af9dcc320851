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


async def hangs_on_even_answers(sample: StringThread) -> float:
    """An async grader that never returns on rows whose ``answer`` is a multiple of 4."""
    import asyncio

    if int(sample.metadata.get("answer", 1)) % 4 == 0:
        await asyncio.Event().wait()
    return 1.0


def sleeps_from_the_fourth_row(sample: StringThread) -> float:
    """A sync grader that blocks for 1000 s from the row whose ``answer`` is 6 on.

    With ``GRADEWIRE_TEST_CALLS`` set, a line is appended to that file as a call starts
    its sleep, so a test knows which samples are blocked.
    """
    import time

    if int(sample.metadata.get("answer", 0)) >= 6:
        calls = os.environ.get("GRADEWIRE_TEST_CALLS")
        if calls:
            with open(calls, "a", encoding="utf-8") as out:
                out.write("sleeping\n")
        time.sleep(1000)
    return 1.0


def sleeps_a_fifth_of_a_second(sample: StringThread) -> float:
    """A sync grader that waits 0.2 s, as a sync HTTP call or a slow parser would."""
    import time

    time.sleep(0.2)
    return 1.0
